"""What went wrong with the database, in words a client can act on.

Operational trouble (the server unreachable or restarting, a lock or statement timeout, a
deadlock, a full disk, every pooled connection busy) can be raised by SQLAlchemy or, inside the
COPY step and SQLite's bulk insert, by the driver directly. ``TROUBLE_TYPES`` lists every class
that means "the database could not do it now", so the API maps each of them, wherever raised,
to one 503; ``describe`` says which trouble it was.
"""

from __future__ import annotations

import sqlite3
from typing import Final

import psycopg
from sqlalchemy import exc as sa_exc

TROUBLE_TYPES: Final[tuple[type[Exception], ...]] = (
    sa_exc.OperationalError,  # SQLAlchemy's wrapper of the drivers' OperationalError
    sa_exc.TimeoutError,  # no pooled connection freed up within the pool timeout
    psycopg.OperationalError,  # raised by the COPY step outside SQLAlchemy
    sqlite3.OperationalError,  # raised by SQLite's executemany outside SQLAlchemy
)

# PostgreSQL SQLSTATEs (and their classes, by the first two characters) a client can act on.
_BY_SQLSTATE: Final = {
    "40P01": "a concurrent request conflicted with this one (deadlock) and the database aborted it",
    "40001": "a concurrent request conflicted with this one (serialization) and the database "
    "aborted it",
    "57014": "the database cancelled the statement (statement timeout or an operator)",
    "55P03": "a lock the request needs was not granted in time (lock timeout)",
    "53100": "the database server is out of disk space",
    "53200": "the database server is out of memory",
    "53300": "the database server has no free connection slot",
    "57P01": "the database server is shutting down",
    "57P02": "the database server crashed and is restarting",
    "57P03": "the database server is starting up or restarting",
    "25006": "the database is read-only",
}
_BY_CLASS: Final = {
    "08": "the connection to the database failed",
    "53": "the database server is out of resources",
    "57": "the database server is stopping or restarting",
    "58": "the database server hit a system error",
}
_SQLITE: Final = {
    "SQLITE_BUSY": "another writer held the database's lock for longer than "
    "CALMON_SQLITE_BUSY_TIMEOUT_MS",
    "SQLITE_LOCKED": "the database is locked",
    "SQLITE_FULL": "the database's disk is full",
    "SQLITE_IOERR": "the database file could not be read or written",
    "SQLITE_READONLY": "the database is read-only",
}


def describe(error: BaseException) -> str:
    """A one-line account of database trouble, for the client and the log."""
    if isinstance(error, sa_exc.TimeoutError):
        return "every database connection of this server is busy (CALMON_DB_POOL_SIZE)"
    original = error.orig if isinstance(error, sa_exc.DBAPIError) else error
    sqlstate = getattr(original, "sqlstate", None)
    if isinstance(sqlstate, str):
        known = _BY_SQLSTATE.get(sqlstate) or _BY_CLASS.get(sqlstate[:2])
        if known:
            return known
    sqlite_name = getattr(original, "sqlite_errorname", None)
    if isinstance(sqlite_name, str):
        for prefix, text in _SQLITE.items():
            if sqlite_name.startswith(prefix):
                return text
    if isinstance(original, psycopg.OperationalError) and sqlstate is None:
        return "the database cannot be reached"
    first_line = str(original).strip().splitlines()[0] if str(original).strip() else ""
    return f"the database could not complete the request ({first_line[:200]})"
