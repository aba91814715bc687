"""The database's clock: the one clock every worker and API replica shares.

Leases and heartbeats compare instants written by one process with instants read by another; on
each process's own clock a worker 15 minutes ahead takes live leases and looks alive 15 minutes
after it died. PostgreSQL's ``statement_timestamp()`` is the same for all of them. SQLite runs
inside each process, so every process sharing its file is on one machine and one clock: there
the machine's clock is the database's.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

from app.db.types import utcnow


def database_now(session: Session) -> datetime:
    """The current instant by the database's clock, aware, in UTC."""
    if session.get_bind().dialect.name != "postgresql":
        return utcnow()
    instant = session.execute(text("SELECT statement_timestamp()")).scalar_one()
    assert isinstance(instant, datetime)
    return instant.astimezone(UTC)
