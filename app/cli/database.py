"""What the commands that open the database directly share: migrating, refusing to create a
SQLite file by accident, and one read-only service call in its own transaction.

The database stack (SQLAlchemy, Alembic, the services) is imported inside these functions, not
at the top: the commands that talk HTTP only never load it (a third of a second every start).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from app.errors import ServiceUnavailableError
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

logger = logging.getLogger("calmon.cli")

T = TypeVar("T")


def migrate(settings: Settings) -> None:
    """Upgrade the database to the newest revision (logged as two lines, not Alembic's)."""
    from app.db.engine import redacted_url  # noqa: PLC0415
    from app.db.migrate import upgrade  # noqa: PLC0415

    logger.info("migrating", extra={"database": redacted_url(settings.database_url)})
    upgrade(settings.database_url)
    logger.info("migrated")


def require_existing_sqlite(settings: Settings, command: str) -> None:
    """Refuse to create a new SQLite file by accident.

    The default database is ``var/calmon.sqlite3`` relative to the working directory, so a
    command run from another directory would otherwise create a fresh, empty database there
    (and a token the running server does not know).
    """
    if not settings.is_sqlite:
        return
    from sqlalchemy import make_url  # noqa: PLC0415

    database = make_url(settings.database_url).database
    if not database or database == ":memory:" or Path(database).exists():
        return
    raise ServiceUnavailableError(
        f"no calmon database at {Path(database).resolve()}: `calmon {command}` works on the "
        "database `calmon serve` uses. Run it in the directory where `calmon serve` runs, or "
        "set CALMON_DATA_DIR or CALMON_DATABASE_URL to that database; `calmon migrate` creates "
        "a new one here"
    )


def ensure_schema(settings: Settings, engine: Engine) -> None:
    """Migrate the embedded database if needed; elsewhere say what to run instead of failing
    later with "no such table"."""
    from app.db.migrate import current_revisions, head_revisions  # noqa: PLC0415

    if set(current_revisions(engine)) == set(head_revisions(settings.database_url)):
        return
    if not settings.should_migrate_on_start:
        raise ServiceUnavailableError("the database schema is not current: run `calmon migrate`")
    migrate(settings)


def in_transaction(settings: Settings, command: str, work: Callable[[Session], T]) -> T:
    """Run ``work`` in one transaction of the current database (committed if it returns)."""
    from app.db.engine import create_db_engine, create_session_factory  # noqa: PLC0415

    require_existing_sqlite(settings, command)
    engine = create_db_engine(settings)
    try:
        ensure_schema(settings, engine)
        with create_session_factory(engine).begin() as session:
            return work(session)
    finally:
        engine.dispose()


def read_only(settings: Settings, command: str, query: Callable[[Session], BaseModel]) -> BaseModel:
    """Run one read-only service call in its own transaction, as the API would."""
    return in_transaction(settings, command, query)
