"""Temporary staging tables of the ingest writes (app/db/repositories/ingest/, labels.py):
their life cycle on both backends and the conversions of what they hold."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection

from app.ingest.timestamps import datetime_to_micros


def is_postgres(connection: Connection) -> bool:
    """Whether ``connection`` is PostgreSQL's (else SQLite's)."""
    return connection.dialect.name == "postgresql"


def create_stage(connection: Connection, name: str, columns: str) -> None:
    """A temporary table for this transaction's rows."""
    suffix = " ON COMMIT DROP" if is_postgres(connection) else ""
    connection.exec_driver_sql(f"CREATE TEMPORARY TABLE {name} ({columns}){suffix}")


def drop_stage(connection: Connection, name: str) -> None:
    """Drop a stage once used (SQLite only)."""
    # PostgreSQL drops it at commit; SQLite keeps temp tables per connection, and pooled
    # connections are reused.
    if not is_postgres(connection):
        connection.exec_driver_sql(f"DROP TABLE {name}")


def stage_instant(connection: Connection, column: str) -> str:
    """SQL turning a staged instant into the stored one.

    PostgreSQL stages epoch microseconds (binary COPY of an int8 is cheaper than building
    50,000 datetime objects) and converts exactly with interval arithmetic. SQLite stages the
    text SQLAlchemy stores for a UtcDateTime.
    """
    if is_postgres(connection):
        return f"(TIMESTAMPTZ 'epoch' + {column} * INTERVAL '1 microsecond')"
    return column


def id_order(connection: Connection, column: str) -> str:
    """ORDER BY that makes every batch lock its rows in one order (PostgreSQL).

    Rows are inserted, updated and locked in the order the SELECT yields them; two batches
    holding the same ids in different orders would each wait for a row the other holds, until
    PostgreSQL aborts one for a deadlock. Byte order ("C") is the cheapest total order. SQLite
    has one writer at a time and needs none.
    """
    return f' ORDER BY {column} COLLATE "C"' if is_postgres(connection) else ""


def stored_micros(value: object) -> int:
    """Epoch microseconds of an instant read back by a textual statement (SQLite hands back
    the stored text, PostgreSQL a datetime)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value).replace(tzinfo=UTC)
    assert isinstance(value, datetime)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return datetime_to_micros(value)
