"""The driver connection under a session's transaction: the one way past SQLAlchemy.

Binary COPY, binary array loaders and ``executemany`` into a staging table need the DB-API
connection itself (psycopg 3 on PostgreSQL, sqlite3 on SQLite). SQLAlchemy types it loosely, so
it is reached and narrowed here once rather than with a ``type: ignore`` at every use.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
from sqlalchemy.orm import Session

DriverConnection = psycopg.Connection[Any] | sqlite3.Connection


def driver_connection(session: Session) -> DriverConnection:
    """The DB-API connection the session's transaction runs on (begun if it was not yet)."""
    raw = session.connection().connection.driver_connection
    if isinstance(raw, psycopg.Connection | sqlite3.Connection):
        return raw
    # app.db.engine accepts only these two drivers, so this is a programming error.
    raise TypeError(f"unsupported database driver connection: {type(raw).__name__}")


def psycopg_connection(session: Session) -> psycopg.Connection[Any] | None:
    """The psycopg connection on PostgreSQL, ``None`` on SQLite."""
    raw = driver_connection(session)
    return raw if isinstance(raw, psycopg.Connection) else None
