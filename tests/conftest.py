"""Shared fixtures: every database test runs on SQLite AND PostgreSQL in one pytest run.

Which fixture to take:

- ``db_session``: a Session inside an outer transaction that is rolled back after the test
  (fast; repository/service tests). Commits inside the test become savepoints. On SQLite it
  holds the write lock for the whole test, so no other connection (client, server) can write.
- ``session_factory`` / ``engine`` / ``database_url``: the real thing, with real commits, on a
  database emptied before the test (concurrency, worker claims, anything another connection
  or process must see).
- ``client`` + ``auth_headers("ingest", "read")``: the FastAPI app in-process (TestClient)
  against the real database, auth enabled.
- ``live_server``: a real `calmon serve` subprocess (uvicorn) on a free loopback port.
- ``empty_database_url``: a brand-new database with no schema (migration tests).

The schema is migrated once per session and backend; committed-style fixtures empty all tables
before their test. PostgreSQL comes from CALMON_TEST_DATABASE_URL (a private schema per session);
without it the PostgreSQL variants skip, except under CI=true where they fail.

Shared helpers live in tests/support, and only there (a test module imports no other test
module: tests/test_test_support.py). The ones most tests want: ``api`` (``AuthHeaders``,
``get_json``), ``waiting.wait_for`` (the one polling loop), ``worker_data`` (``new_model``,
``add_model``, ``insert_rows``, ``drain``, ``find_model_id``), ``worker_output`` (computed
windows and metric values), ``streams`` (synthetic days, ``batch_body``, ``post_batch``),
``server`` and ``worker_process`` (real ``calmon serve`` and ``calmon worker`` processes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.schemas.tokens import Scope
from app.services.tokens import create_token
from app.settings import Settings
from tests.support.api import AuthHeaders
from tests.support.databases import (
    Backend,
    empty_tables,
    fresh_database,
    settings_for,
    table_names,
)
from tests.support.server import LiveServer, keep_logs_under, running_server

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]


@dataclass
class MigratedDatabase:
    """A database at the head revision, shared by the tests of one session and backend."""

    backend: Backend
    url: str
    engine: Engine
    tables: list[str]
    # True once a test may have committed rows; the next test that needs a clean slate
    # empties the tables first (rollback-style tests leave nothing and skip that cost).
    dirty: bool = False

    def ensure_empty(self) -> None:
        if self.dirty:
            empty_tables(self.engine, self.tables)
            self.dirty = False


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """The database backend of this test variant: "sqlite" or "postgresql"."""
    name: Backend = request.param
    return name


@pytest.fixture(scope="session", autouse=True)
def process_logs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The logs of the processes tests start go to the session's temporary directory (which
    pytest prunes to its last three sessions), not to directories of their own left in /tmp."""
    keep_logs_under(tmp_path_factory.mktemp("process-logs"))


@pytest.fixture(scope="session")
def migrated_database(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MigratedDatabase]:
    """Create one database per session and backend, upgraded to head."""
    with fresh_database(backend, tmp_path_factory.mktemp(f"db-{backend}")) as url:
        upgrade(url)
        engine = create_db_engine(settings_for(url))
        try:
            yield MigratedDatabase(backend, url, engine, table_names(engine))
        finally:
            engine.dispose()


@pytest.fixture
def database_url(migrated_database: MigratedDatabase) -> str:
    """URL of the migrated database, emptied before this test; commit freely."""
    migrated_database.ensure_empty()
    migrated_database.dirty = True
    return migrated_database.url


@pytest.fixture
def engine(migrated_database: MigratedDatabase, database_url: str) -> Engine:
    """Engine on the emptied, migrated database (shared across tests; do not dispose)."""
    return migrated_database.engine


@pytest.fixture
def session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions with real commits: ``with session_factory.begin() as session: ...``."""
    return create_session_factory(engine)


@pytest.fixture
def db_session(migrated_database: MigratedDatabase) -> Iterator[Session]:
    """A session whose work is rolled back after the test (STYLE convention 10).

    ``session.commit()`` inside the test only releases a savepoint, so nothing escapes.
    """
    migrated_database.ensure_empty()
    with migrated_database.engine.connect() as connection:
        outer = connection.begin()
        session = Session(
            bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False
        )
        try:
            yield session
        finally:
            session.close()
            outer.rollback()


@pytest.fixture
def empty_database_url(backend: Backend, tmp_path: Path) -> Iterator[str]:
    """A brand-new database without any schema, removed after the test."""
    with fresh_database(backend, tmp_path) as url:
        yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Settings pointing at the emptied database, auth enabled."""
    return settings_for(database_url)


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    """A fresh calmon app (its lifespan runs when ``client`` enters it)."""
    return create_app(settings)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """An in-process HTTP client for ``app``, lifespan included."""
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def make_token(session_factory: sessionmaker[Session]) -> Callable[..., str]:
    """Mint a real token in the database: ``make_token("ingest", "read", name="x")``, limited
    to some models with ``models=["team-a-*"]``."""

    def make(*scopes: Scope, name: str = "test", models: list[str] | None = None) -> str:
        with session_factory.begin() as session:
            return create_token(session, name, list(scopes), models).token

    return make


@pytest.fixture
def auth_headers(make_token: Callable[..., str]) -> AuthHeaders:
    """Headers carrying a fresh token: ``client.get(url, headers=auth_headers("read"))``."""

    def headers(
        *scopes: Scope, name: str = "test", models: list[str] | None = None
    ) -> dict[str, str]:
        return {"Authorization": f"Bearer {make_token(*scopes, name=name, models=models)}"}

    return headers


@pytest.fixture
def live_server(database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """A real `calmon serve` process on the emptied database (auth enabled, logs in tmp_path)."""
    with running_server(database_url, log_dir=tmp_path) as server:
        yield server
