"""Engine and session factories. Nothing here connects until a caller asks for a connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

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
    check_userinfo(settings.database_url)
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(settings)
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
    connect_args = {} if "connect_timeout" in url.query else {"connect_timeout": 10}
    return create_engine(
        url, pool_size=settings.db_pool_size, pool_pre_ping=True, connect_args=connect_args
    )


def _sqlite_engine(settings: Settings) -> Engine:
    url = make_url(settings.database_url)
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    # Request handlers run in a thread pool, so a pooled connection may move between threads.
    engine = create_engine(url, connect_args={"check_same_thread": False})
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
        # BEGIN IMMEDIATE takes the write lock up front, so concurrent writers queue on
        # busy_timeout. A deferred transaction that reads and then writes would instead fail
        # with "database is locked" when another writer committed in between.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def create_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded attributes after commit (responses are built after it)."""
    return sessionmaker(engine, expire_on_commit=False)
