"""Many-row INSERT and UPDATE inside the caller's transaction: COPY on PostgreSQL.

A pi0 move rewrites a whole series at once (365 windows of one segment: 365 window rows and
4,015 metric value rows). Through ``executemany`` that is one round of statement handling per
row, which made the writes the largest part of the recomputation; one COPY (plus, for updates,
one ``UPDATE ... FROM`` a temporary table) does the same work in a few statements. The few rows
a window's pass updates (one a segment) go the other way: the staging table's five statements
cost more than an UPDATE a row sent together (:data:`FEW_ROWS`). SQLite has no COPY and no
server round trips to save, so it keeps ``executemany``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import psycopg
from psycopg.types.json import Json, Jsonb, set_json_dumps
from pydantic_core import to_json
from sqlalchemy import insert, update
from sqlalchemy.orm import DeclarativeBase, Session

from app.db.copy_binary import copy_in
from app.db.driver import psycopg_connection

Row = Mapping[str, Any]

FEW_ROWS = 32
"""Up to this many rows an update goes as one UPDATE a row, pipelined: the handful a window's
pass writes a call (its segments' verdicts, nowcasts). A transaction with the staging table's
five statements (create, type lookup, copy, update, drop) took 1.8-2.6 ms for 5 to 400 rows;
with the type lookup and the pipelined updates, 0.8-1.1 ms for 5 rows, 1.0-1.4 for 32, 1.4
for 64, 1.8 for 90 and 2.6 for 128 (an empty transaction: 0.35-0.5 ms; stop 50, local
PostgreSQL 15): past about 90 rows the staging table is the cheaper."""
_JSON, _JSONB = 114, 3802  # pg_type OIDs


def _cursor(session: Session) -> psycopg.Cursor[Any] | None:
    """The raw psycopg cursor on PostgreSQL, ``None`` on any other database."""
    if session.get_bind().dialect.name != "postgresql":
        return None
    raw = psycopg_connection(session)
    assert raw is not None
    cursor = raw.cursor()
    # pydantic's Rust encoder (already a dependency) writes equivalent JSON (floats round-trip
    # exactly) ~3x faster than the json module; a series rewrite encodes ~1,000 documents.
    set_json_dumps(to_json, cursor)
    return cursor


def _column_types(
    cursor: psycopg.Cursor[Any], table: str, columns: Sequence[str]
) -> dict[str, int]:
    """The type OID of each of ``columns`` of ``table``."""
    cursor.execute(
        "SELECT a.attname, a.atttypid::int FROM pg_attribute AS a "
        "WHERE a.attrelid = %s::regclass AND a.attname = ANY(%s)",
        (table, list(columns)),
    )
    return dict(cursor.fetchall())


def _copy(
    cursor: psycopg.Cursor[Any],
    target: str,
    columns: Sequence[str],
    rows: Sequence[Row],
    *,
    types_of: str,
) -> None:
    """Binary COPY of ``rows`` into ``target``, typed like the columns of table ``types_of``.

    Binary COPY with declared types lets psycopg dump each row in C: measured on 4,015 metric
    value rows, 4.5 ms against 20 ms as text.
    """
    oids = _column_types(cursor, types_of, columns)
    values = itemgetter(*columns)
    # With the types declared, psycopg picks each column's dumper by type: a dict in a json
    # column is dumped as JSON without a wrapper.
    copy_in(
        cursor,
        target,
        columns,
        (values(row) if len(columns) > 1 else (values(row),) for row in rows),
        types=[oids[c] for c in columns],
    )


def insert_many(session: Session, entity: type[DeclarativeBase], rows: Sequence[Row]) -> None:
    """Insert ``rows`` (dicts with the same keys) into ``entity``'s table."""
    if not rows:
        return
    cursor = _cursor(session)
    if cursor is None:
        session.execute(insert(entity), list(rows))
        return
    with cursor:
        table = entity.__tablename__
        _copy(cursor, table, list(rows[0]), rows, types_of=table)


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
    with cursor:
        if len(rows) <= FEW_ROWS:
            _update_row_by_row(cursor, table, columns, rows, key)
            return
        # CREATE TABLE AS copies the column types but no NOT NULL: the stage holds only what
        # changes.
        names = ", ".join(columns)
        cursor.execute(
            f"CREATE TEMPORARY TABLE {stage} AS SELECT {names} FROM {table} WITH NO DATA"
        )
        _copy(cursor, stage, columns, rows, types_of=table)
        assignments = ", ".join(f"{c} = s.{c}" for c in columns if c not in key)
        matches = " AND ".join(f"t.{c} = s.{c}" for c in key)
        cursor.execute(f"UPDATE {table} AS t SET {assignments} FROM {stage} AS s WHERE {matches}")
        cursor.execute(f"DROP TABLE {stage}")


def _update_row_by_row(
    cursor: psycopg.Cursor[Any],
    table: str,
    columns: Sequence[str],
    rows: Sequence[Row],
    key: Sequence[str],
) -> None:
    """One UPDATE a row, sent together (psycopg pipelines ``executemany``); JSON columns'
    values wrapped as such (a NULL stays NULL), the others adapted from their Python types."""
    oids = _column_types(cursor, table, columns)
    wrap = {_JSON: Json, _JSONB: Jsonb}
    changed = [c for c in columns if c not in key]
    order = [*changed, *key]
    cursor.executemany(
        f"UPDATE {table} SET {', '.join(f'{c} = %s' for c in changed)} "
        f"WHERE {' AND '.join(f'{c} = %s' for c in key)}",
        [
            tuple(
                row[c] if row[c] is None or oids[c] not in wrap else wrap[oids[c]](row[c])
                for c in order
            )
            for row in rows
        ],
    )


def update_each(
    session: Session, entity: type[DeclarativeBase], rows: Sequence[Row], key: Sequence[str]
) -> None:
    """:func:`update_many` for rows that name different columns: rows naming the same columns
    are written together."""
    by_columns: dict[tuple[str, ...], list[Row]] = {}
    for row in rows:
        by_columns.setdefault(tuple(row), []).append(row)
    for group in by_columns.values():
        update_many(session, entity, group, key=key)
