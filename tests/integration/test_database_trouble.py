"""Database trouble is a 503 with a true message, wherever it is raised (issue 16, finding 3),
and /readyz answers within its own short timeout and turns red when writes cannot proceed, or
when this server's last write failed and none has succeeded since (issue 25).

Real databases, real locks and real timeouts: a held pool, a table locked by another
connection, a statement cut by PostgreSQL's statement_timeout inside the COPY step.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, event, func, select, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.api.write_health import PROBE_TRUSTED_AFTER_SECONDS
from app.db.tables import Prediction
from app.services.tokens import create_token
from app.settings import Settings
from tests.support.databases import Backend, settings_for, with_server_setting
from tests.support.waiting import wait_for

MODEL = {"name": "fraud-v1", "threshold": 0.5}


def _token(factory: sessionmaker[Session]) -> dict[str, str]:
    with factory.begin() as session:
        token = create_token(session, "trouble", ["admin", "ingest", "read"]).token
    return {"Authorization": f"Bearer {token}"}


@contextmanager
def _exhausted(engine: Engine) -> Iterator[None]:
    """Every connection the engine's pool may hand out is checked out and held."""
    pool = engine.pool
    capacity = pool.size() + pool._max_overflow  # type: ignore[attr-defined]
    with ExitStack() as stack:
        for _ in range(capacity):
            stack.enter_context(engine.connect())
        yield


def test_an_exhausted_pool_is_503_and_readyz_still_answers(
    database_url: str, session_factory: sessionmaker[Session]
) -> None:
    headers = _token(session_factory)
    settings = settings_for(database_url, db_pool_timeout_seconds=0.5)
    with TestClient(create_app(settings)) as client:
        with _exhausted(client.app.state.engine):  # type: ignore[attr-defined]
            response = client.get("/v1/models", headers=headers)
            ready = client.get("/readyz")
        assert client.get("/v1/models", headers=headers).status_code == 200
    assert response.status_code == 503, response.text
    assert "every database connection" in response.json()["error"]["message"]
    assert response.headers["retry-after"]
    # The probe answers from its own engine, not from the exhausted pool.
    assert ready.status_code == 200, ready.text


@contextmanager
def _writes_blocked(backend: Backend, url: str) -> Iterator[None]:
    """Another connection holds what every write needs: an exclusive lock on predictions
    (PostgreSQL), the database's write lock (SQLite)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            if backend == "postgresql":
                connection.begin()
                connection.execute(text("LOCK TABLE predictions IN ACCESS EXCLUSIVE MODE"))
            else:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            yield
            connection.rollback()
    finally:
        engine.dispose()


def test_readyz_turns_red_while_writes_are_blocked(backend: Backend, database_url: str) -> None:
    settings = settings_for(database_url, readiness_timeout_seconds=0.5)
    with TestClient(create_app(settings)) as client:
        assert client.get("/readyz").status_code == 200
        with _writes_blocked(backend, database_url):
            blocked = client.get("/readyz")
        assert client.get("/readyz").status_code == 200
    assert blocked.status_code == 503, blocked.text
    message = blocked.json()["error"]["message"]
    assert message.startswith("the database is not ready for writes")
    # A lock timeout: the probe's own bound ended the wait (neither backend has another).
    assert "lock" in message


@pytest.mark.postgres
def test_a_statement_cancelled_inside_the_copy_step_is_503(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session], engine: Engine
) -> None:
    if backend != "postgresql":
        pytest.skip("the COPY step exists on PostgreSQL only")
    headers = _token(session_factory)
    with TestClient(create_app(settings_for(database_url))) as client:
        assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
    start = datetime(2026, 11, 2, tzinfo=UTC)
    n = 100_000
    columns = {
        "id": [f"tx-{i}" for i in range(n)],
        "timestamp": [(start + timedelta(seconds=i % 80_000)).isoformat() for i in range(n)],
        "score": [0.5] * n,
    }
    slow = settings_for(with_server_setting(database_url, "statement_timeout", 25))
    with TestClient(create_app(slow)) as client:
        response = client.post(
            "/v1/models/fraud-v1/batches",
            json={"batch_id": "b1", "columns": columns},
            headers=headers,
        )
    assert response.status_code == 503, response.text
    assert "cancel" in response.json()["error"]["message"]
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(Prediction)) == 0


# --- The readiness latch (issue 25): a write that failed keeps /readyz red until one succeeds.


def _batch(batch_id: str) -> dict[str, object]:
    start = datetime(2026, 11, 2, tzinfo=UTC)
    return {
        "batch_id": batch_id,
        "columns": {
            "id": [f"{batch_id}-{i}" for i in range(3)],
            "timestamp": [(start + timedelta(minutes=i)).isoformat() for i in range(3)],
            "score": [0.2, 0.5, 0.9],
        },
    }


@contextmanager
def _model_row_held(backend: Backend, url: str) -> Iterator[None]:
    """Another connection holds what a batch needs and, on PostgreSQL, the probe does not: the
    model's row FOR UPDATE (a batch takes it FOR KEY SHARE); on SQLite, where one lock serves
    every write, the database's write lock."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            if backend == "postgresql":
                connection.begin()
                connection.execute(text("SELECT 1 FROM models WHERE name = 'fraud-v1' FOR UPDATE"))
            else:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            yield
            connection.rollback()
    finally:
        engine.dispose()


def _timing_out(backend: Backend, url: str) -> Settings:
    """Settings whose writes give up after a short wait: PostgreSQL's statement_timeout on
    every connection of the app, SQLite's busy timeout."""
    if backend == "postgresql":
        return settings_for(
            with_server_setting(url, "statement_timeout", 300), readiness_timeout_seconds=0.5
        )
    return settings_for(url, sqlite_busy_timeout_ms=300, readiness_timeout_seconds=0.5)


def test_a_write_cut_by_a_timeout_keeps_readyz_red_until_a_write_succeeds(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session]
) -> None:
    headers = _token(session_factory)
    with TestClient(create_app(_timing_out(backend, database_url))) as client:
        assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
        assert client.get("/readyz").status_code == 200
        with _model_row_held(backend, database_url):
            failed = client.post("/v1/models/fraud-v1/batches", json=_batch("b1"), headers=headers)
            failed_at = time.monotonic()
            red = client.get("/readyz")
        # The wait is over and the probe's own write goes through: the failure stands still.
        released = client.get("/readyz")
        released_after = time.monotonic() - failed_at
        stored = client.post("/v1/models/fraud-v1/batches", json=_batch("b2"), headers=headers)
        green = client.get("/readyz")
    assert failed.status_code == 503, failed.text
    assert red.status_code == 503, red.text
    if backend == "postgresql":
        # The probe takes no lock on the model's row: only the latch knows a write failed.
        message = red.json()["error"]["message"]
        assert message.startswith("a write failed"), message
        assert "statement timeout" in message
    if released_after < PROBE_TRUSTED_AFTER_SECONDS:  # else the probe was rightly trusted
        assert released.status_code == 503, released.text
    assert stored.status_code == 201, stored.text
    assert green.status_code == 200, green.text


def test_without_writes_the_probe_turns_readyz_green_again_within_two_seconds(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session]
) -> None:
    """A load balancer sends no write to a red instance: the probe's own write must do."""
    headers = _token(session_factory)
    with TestClient(create_app(_timing_out(backend, database_url))) as client:
        assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
        with _model_row_held(backend, database_url):
            failed = client.post("/v1/models/fraud-v1/batches", json=_batch("b1"), headers=headers)
        failed_at = time.monotonic()
        red = client.get("/readyz")
        red_after = time.monotonic() - failed_at
        wait_for(
            lambda: client.get("/readyz").status_code == 200,
            "readyz green again",
            timeout=PROBE_TRUSTED_AFTER_SECONDS + 2,
            poll=0.1,
        )
        green_after = time.monotonic() - failed_at
    assert failed.status_code == 503, failed.text
    if red_after < PROBE_TRUSTED_AFTER_SECONDS:  # else the probe was rightly trusted at once
        assert red.status_code == 503, red.text
    # Not before the real write's failure is PROBE_TRUSTED_AFTER_SECONDS old (the margin: the
    # failure came a little before failed_at).
    assert green_after >= PROBE_TRUSTED_AFTER_SECONDS - 0.2


@contextmanager
def _read_only_connections(engine: Engine) -> Iterator[None]:
    """Every new connection of ``engine`` is read-only, as connections to a primary demoted to
    a standby are; the pool is emptied on the way in and out."""

    def read_only(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SET default_transaction_read_only = on")
        dbapi_connection.commit()  # a SET in a transaction rolled back would be undone

    event.listen(engine, "connect", read_only)
    engine.dispose()
    try:
        yield
    finally:
        event.remove(engine, "connect", read_only)
        engine.dispose()


@pytest.mark.postgres
def test_read_only_connections_keep_readyz_red_until_a_write_succeeds(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session]
) -> None:
    """The probe's fresh connection could write; this server's pooled ones cannot, and the
    read-only refusal is a 503 (it was a 500: PostgreSQL files it under InternalError)."""
    if backend != "postgresql":
        pytest.skip("default_transaction_read_only is PostgreSQL's")
    headers = _token(session_factory)
    with TestClient(create_app(settings_for(database_url))) as client:
        assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
        with _read_only_connections(client.app.state.engine):  # type: ignore[attr-defined]
            failed = client.post("/v1/models/fraud-v1/batches", json=_batch("b1"), headers=headers)
            red = client.get("/readyz")
        stored = client.post("/v1/models/fraud-v1/batches", json=_batch("b1"), headers=headers)
        green = client.get("/readyz")
    assert failed.status_code == 503, failed.text
    assert "read-only" in failed.json()["error"]["message"]
    assert red.status_code == 503, red.text
    assert red.json()["error"]["message"].startswith("a write failed")
    assert stored.status_code == 201, stored.text
    assert green.status_code == 200, green.text
