"""Real test databases: a SQLite file, or a private schema in the PostgreSQL test database.

A private PostgreSQL schema per test session (``search_path`` set through the connection URL)
lets several pytest runs share one server and one database without seeing each other's rows.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest
from sqlalchemy import URL, Connection, Engine, MetaData, create_engine, make_url, text

from app.settings import Settings

Backend = Literal["sqlite", "postgresql"]
POSTGRES_URL_ENV = "CALMON_TEST_DATABASE_URL"
SCHEMA_PREFIX = "calmon_test_"


def settings_for(database_url: str, **overrides: object) -> Settings:
    """Settings for tests: explicit values, so the developer's CALMON_* variables do not leak."""
    values: dict[str, object] = {
        "database_url": database_url,
        "auth_disabled": False,
        "environment": "development",
        "migrate_on_start": False,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def with_server_setting(url: str, name: str, value: object) -> str:
    """``url`` whose PostgreSQL connections start with ``SET name = value`` (libpq options)."""
    parsed = make_url(url)
    options = parsed.query.get("options", "")
    assert isinstance(options, str)
    updated = parsed.update_query_dict({"options": f"{options} -c {name}={value}".strip()})
    return updated.render_as_string(hide_password=False)


def postgres_base_url() -> URL:
    """The PostgreSQL test database; skip without it, but fail under CI=true.

    A CI run that silently skipped PostgreSQL would report green while testing only SQLite.
    """
    raw = os.environ.get(POSTGRES_URL_ENV)
    in_ci = os.environ.get("CI") == "true"
    if not raw:
        if in_ci:
            pytest.fail(f"CI=true but {POSTGRES_URL_ENV} is unset", pytrace=False)
        pytest.skip(f"set {POSTGRES_URL_ENV} to run the PostgreSQL variant")
    url = make_url(raw)
    probe = create_engine(url)
    try:
        with probe.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:
        pytest.fail(f"PostgreSQL at {url.render_as_string()} is unreachable: {exc}", pytrace=False)
    finally:
        probe.dispose()
    return url


@contextmanager
def fresh_database(backend: Backend, directory: Path) -> Iterator[str]:
    """Yield the URL of a new, empty database and remove it afterwards."""
    if backend == "sqlite":
        path = directory / f"calmon-{secrets.token_hex(4)}.sqlite3"
        yield f"sqlite:///{path.as_posix()}"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    base = postgres_base_url()
    schema = f"{SCHEMA_PREFIX}{os.getpid()}_{secrets.token_hex(3)}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            _drop_orphaned_schemas(connection)
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = base.update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
        with admin.connect() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    finally:
        admin.dispose()


def _drop_orphaned_schemas(connection: Connection) -> None:
    """Drop schemas left by pytest runs that were killed before their teardown.

    The schema name carries the creating process id; a schema whose process is gone (on this
    host, where the tests run) is garbage. A live process, or a reused pid, keeps its schema.
    """
    names = connection.scalars(
        text("SELECT nspname FROM pg_namespace WHERE nspname LIKE :prefix"),
        {"prefix": f"{SCHEMA_PREFIX}%"},
    )
    for name in list(names):
        pid = name.removeprefix(SCHEMA_PREFIX).split("_", 1)[0]
        if pid.isdigit() and not _process_alive(int(pid)):
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def table_names(engine: Engine) -> list[str]:
    """Every table except Alembic's bookkeeping, parents before children (reflected once)."""
    metadata = MetaData()
    metadata.reflect(engine)
    return [t.name for t in metadata.sorted_tables if t.name != "alembic_version"]


def empty_tables(engine: Engine, names: list[str]) -> None:
    """Delete every row of the tables ``names`` (from :func:`table_names`) in one transaction."""
    if not names:
        return
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            quoted = ", ".join(f'"{name}"' for name in names)
            connection.execute(text(f"TRUNCATE TABLE {quoted} RESTART IDENTITY CASCADE"))
        else:
            for name in reversed(names):  # children before parents (foreign keys are on)
                connection.execute(text(f'DELETE FROM "{name}"'))
