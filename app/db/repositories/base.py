"""What every repository shares: the caller's session, and which database is behind it.

A repository works inside the transaction of whoever constructed it (a request's dependency, a
worker's use case): it never commits, so the base holds the session and nothing else.
"""

from __future__ import annotations

from sqlalchemy.orm import Session


class Repository:
    """A repository of one subject, constructed with the caller's session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    @property
    def on_postgres(self) -> bool:
        """Whether the session's database is PostgreSQL (else SQLite): where the SQL differs."""
        return self.session.get_bind().dialect.name == "postgresql"
