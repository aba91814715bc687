"""Many-row INSERT and UPDATE inside the caller's transaction: COPY on PostgreSQL.

A pi0 move rewrites a whole series at once (365 windows are ~400 window rows and ~6,000 metric
value rows). Through ``executemany`` that is one round of statement handling per row, which
made the writes the largest part of the recomputation; one COPY (plus, for updates, one
``UPDATE ... FROM`` a temporary table) does the same work in a few statements. SQLite has no
COPY and no server round trips to save, so it keeps ``executemany``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.types.json import Json
from sqlalchemy import insert, update
from sqlalchemy.orm import DeclarativeBase, Session

Row = Mapping[str, Any]


def _cursor(session: Session) -> psycopg.Cursor[Any] | None:
    """The raw psycopg cursor on PostgreSQL, ``None`` on any other database."""
    if session.get_bind().dialect.name != "postgresql":
        return None
    raw = session.connection().connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    return raw.cursor()


def _copy(
    cursor: psycopg.Cursor[Any], table: str, columns: Sequence[str], rows: Sequence[Row]
) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row([_value(row[c]) for c in columns])


def _value(v: Any) -> Any:
    # JSON columns hold dicts (and lists); psycopg needs them wrapped to dump them as json.
    return Json(v) if isinstance(v, dict | list) else v


def insert_many(session: Session, entity: type[DeclarativeBase], rows: Sequence[Row]) -> None:
    """Insert ``rows`` (dicts with the same keys) into ``entity``'s table."""
    if not rows:
        return
    cursor = _cursor(session)
    if cursor is None:
        session.execute(insert(entity), list(rows))
        return
    with cursor:
        _copy(cursor, entity.__tablename__, list(rows[0]), rows)


def update_many(
    session: Session, entity: type[DeclarativeBase], rows: Sequence[Row], key: Sequence[str]
) -> None:
    """Update ``entity``'s rows by primary ``key`` with the other values of ``rows``.

    Every row must have the same keys; columns a row does not name are left as they are.
    """
    if not rows:
        return
    cursor = _cursor(session)
    if cursor is None:
        session.execute(update(entity), list(rows))
        return
    table = entity.__tablename__
    columns = list(rows[0])
    stage = f"_calmon_update_{table}"
    # CREATE TABLE AS copies the column types but no NOT NULL: the stage holds only what changes.
    with cursor:
        names = ", ".join(columns)
        cursor.execute(
            f"CREATE TEMPORARY TABLE {stage} AS SELECT {names} FROM {table} WITH NO DATA"
        )
        _copy(cursor, stage, columns, rows)
        assignments = ", ".join(f"{c} = s.{c}" for c in columns if c not in key)
        matches = " AND ".join(f"t.{c} = s.{c}" for c in key)
        cursor.execute(f"UPDATE {table} AS t SET {assignments} FROM {stage} AS s WHERE {matches}")
        cursor.execute(f"DROP TABLE {stage}")
