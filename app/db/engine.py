"""Engine and session factories. Nothing here connects until a caller asks for a connection."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry, NullPool

from app.errors import ServiceUnavailableError
from app.settings import Settings


def redacted_url(url: str) -> str:
    """The URL with its password masked, even when an ``@`` in it was not percent-encoded.

    SQLAlchemy splits ``user:p@ss@host`` at the first ``@`` and would show ``ss@host`` as
    part of the host; masking everything between the scheme's first ``:`` and the last ``@``
    before the path never shows any of the password.
    """
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}{slash}{path}"


def check_userinfo(url: str) -> None:
    """Refuse a password with an unencoded ``@``: every URL parser (SQLAlchemy's, libpq's)
    splits at the first one, so the tail of the password would become the host name and show
    up in error messages and logs."""
    _scheme, _separator, rest = url.partition("://")
    if rest.partition("/")[0].count("@") > 1:
        raise ServiceUnavailableError(
            "the database URL's password contains an unencoded '@': percent-encode it as %40 "
            f"({redacted_url(url)})"
        )


def create_db_engine(settings: Settings) -> Engine:
    """Build the engine for ``settings.database_url`` (SQLite or PostgreSQL via psycopg 3)."""
    return _engine(settings, pool_timeout=settings.db_pool_timeout_seconds)


def create_probe_engine(settings: Settings) -> Engine:
    """An engine for /readyz: no pool (a probe never waits behind busy requests) and every
    wait bounded by ``readiness_timeout_seconds``."""
    timeout = settings.readiness_timeout_seconds
    # libpq counts connect_timeout in whole seconds and treats anything under 2 as 2.
    probe_settings = settings.model_copy(update={"sqlite_busy_timeout_ms": int(timeout * 1000)})
    return _engine(probe_settings, connect_timeout=max(2, math.ceil(timeout)), pooled=False)


def _engine(
    settings: Settings,
    *,
    pool_timeout: float = 30.0,
    connect_timeout: int = 10,
    pooled: bool = True,
) -> Engine:
    check_userinfo(settings.database_url)
    url = make_url(settings.database_url)
    pool: dict[str, Any] = {"pool_timeout": pool_timeout} if pooled else {"poolclass": NullPool}
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(settings, pool)
    if url.drivername == "postgresql":
        # A plain postgresql:// URL (as psql and most hosting panels print it) means psycopg 3.
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() == "postgresql" and url.get_driver_name() != "psycopg":
        # The bulk write path uses psycopg 3's COPY; refuse other drivers early and clearly.
        raise ValueError(
            f"PostgreSQL URLs must use the psycopg 3 driver (postgresql+psycopg://...), "
            f"got {url.drivername}"
        )
    # libpq waits forever for an unreachable host by default; /readyz must answer instead.
    connect_args = {} if "connect_timeout" in url.query else {"connect_timeout": connect_timeout}
    if pooled:
        pool.update(pool_size=settings.db_pool_size, pool_pre_ping=True)
    return create_engine(url, connect_args=connect_args, **pool)


def _sqlite_engine(settings: Settings, pool: dict[str, Any]) -> Engine:
    url = make_url(settings.database_url)
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    else:  # an in-memory database gets a pool of one connection per thread, with no timeout
        pool = {key: value for key, value in pool.items() if key != "pool_timeout"}
    # Request handlers run in a thread pool, so a pooled connection may move between threads.
    engine = create_engine(url, connect_args={"check_same_thread": False}, **pool)
    busy_timeout_ms = settings.sqlite_busy_timeout_ms

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # Let SQLAlchemy (not the sqlite3 module) decide where transactions begin: see _begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers do not block the writer
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")  # durable enough with WAL, much faster
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        if connection.get_execution_options().get(READ_ONLY):
            # A read takes no lock up front: under WAL, readers run side by side and beside
            # the writer (a page's parallel requests no longer queue on the write lock).
            # query_only makes a write inside fail at once rather than race for the lock.
            connection.exec_driver_sql("PRAGMA query_only = ON")
            connection.exec_driver_sql("BEGIN")
            return
        connection.exec_driver_sql("PRAGMA query_only = OFF")
        # BEGIN IMMEDIATE takes the write lock up front, so concurrent writers queue on
        # busy_timeout. A deferred transaction that reads and then writes would instead fail
        # with "database is locked" when another writer committed in between.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


READ_ONLY = "calmon_read_only"
"""Execution option of a transaction that only reads (``Session(execution_options=...)``): on
SQLite it begins deferred and read-only instead of taking the write lock; elsewhere it is
ignored."""


def create_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded attributes after commit (responses are built after it)."""
    return sessionmaker(engine, expire_on_commit=False)
