"""The readiness probe's SQL: can this database take a write now?

A probe that only runs ``SELECT 1`` stays green while every write waits on a lock or fails; the
probe therefore does what a write does first, within its own time limit, and rolls back:
on PostgreSQL it takes the lock an INSERT takes on the tables ingestion writes and updates a
row (so a lock held against writers, a read-only or a failing server shows); on SQLite it
takes the database's write lock (BEGIN IMMEDIATE, see app.db.engine).
"""

from __future__ import annotations

from sqlalchemy import Engine, text

from app.db.migrate import current_revisions

# The tables every batch writes (app.db.repositories.ingest).
_WRITTEN_TABLES = "predictions, batches, windows"


def check_writable(engine: Engine, timeout_seconds: float) -> tuple[str, ...]:
    """Take a write's locks and write a row, then roll back; returns the schema revisions.

    Raises SQLAlchemy's OperationalError when a lock or the write is not granted within
    ``timeout_seconds`` (or the database cannot be reached).
    """
    revisions = current_revisions(engine)
    if not revisions:
        return revisions
    with engine.connect() as connection, connection.begin() as transaction:
        if connection.dialect.name == "postgresql":
            milliseconds = max(1, int(timeout_seconds * 1000))
            connection.execute(text(f"SET LOCAL lock_timeout = {milliseconds}"))
            # A little longer, so that a lock wait is reported as the lock timeout it is.
            connection.execute(text(f"SET LOCAL statement_timeout = {milliseconds + 250}"))
            connection.execute(text(f"LOCK TABLE {_WRITTEN_TABLES} IN ROW EXCLUSIVE MODE"))
        connection.execute(text("UPDATE alembic_version SET version_num = version_num"))
        transaction.rollback()
    return revisions
