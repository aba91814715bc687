"""What went wrong with the database, in words a client can act on.

Operational trouble (the server unreachable or restarting, a lock or statement timeout, a
deadlock, a full disk, every pooled connection busy) can be raised by SQLAlchemy or, inside the
COPY step and SQLite's bulk insert, by the driver directly. ``TROUBLE_TYPES`` lists every class
that means "the database could not do it now", so the API maps each of them, wherever raised,
to one 503; ``describe`` says which trouble it was. A read-only transaction (a demoted
primary, ``default_transaction_read_only``) is the one trouble PostgreSQL files under
InternalError, with bugs: ``is_trouble`` tells it apart.
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
    sa_exc.InternalError,  # a read-only transaction among bugs (is_trouble)
    psycopg.errors.ReadOnlySqlTransaction,  # the same, raised by the COPY step
)
_READ_ONLY: Final = "25006"

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
    _READ_ONLY: "the database is read-only",
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


def is_trouble(error: BaseException) -> bool:
    """Whether ``error`` (an instance of one of ``TROUBLE_TYPES``) is trouble, not a bug."""
    if isinstance(error, sa_exc.InternalError):
        return getattr(error.orig, "sqlstate", None) == _READ_ONLY
    return True


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


# A conflict between two requests that the database settled by aborting one: the other's write
# went through, so the database takes writes.
_CONFLICTS: Final = frozenset({"40P01", "40001"})


def refuses_writes(error: BaseException) -> bool:
    """Whether ``error``, raised by a write, says the database does not take writes now (the
    readiness latch, app.api.write_health): every trouble but a conflict between requests and a
    busy pool (this server's connections, not the database: /readyz keeps its own)."""
    if isinstance(error, sa_exc.TimeoutError):
        return False
    original = error.orig if isinstance(error, sa_exc.DBAPIError) else error
    return getattr(original, "sqlstate", None) not in _CONFLICTS
