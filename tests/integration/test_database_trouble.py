"""Database trouble is a 503 with a true message, wherever it is raised (issue 16, finding 3),
and /readyz answers within its own short timeout and turns red when writes cannot proceed.

Real databases, real locks and real timeouts: a held pool, a table locked by another
connection, a statement cut by PostgreSQL's statement_timeout inside the COPY step.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, func, make_url, select, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.db.tables import Prediction
from app.services.tokens import create_token
from tests.support.databases import Backend, settings_for

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


def _with_statement_timeout(url: str, milliseconds: int) -> str:
    parsed = make_url(url)
    options = parsed.query.get("options", "")
    assert isinstance(options, str)
    updated = parsed.update_query_dict(
        {"options": f"{options} -c statement_timeout={milliseconds}".strip()}
    )
    return updated.render_as_string(hide_password=False)


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
    slow = settings_for(_with_statement_timeout(database_url, 25))
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
