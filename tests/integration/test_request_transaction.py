"""The request owns the transaction: commit on success, rollback on error, and a failed commit
is an error response, never a 2xx for data that was not stored (both backends)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.api.deps import SessionDep
from app.db.tables import MonitoredModel, Window
from app.errors import ConflictError
from app.schemas.models import ModelCreate
from app.services.models import add_model
from app.settings import Settings
from tests.support.databases import settings_for


def _model_names(factory: sessionmaker[Session]) -> list[str]:
    with factory() as session:
        return list(session.scalars(select(MonitoredModel.name).order_by(MonitoredModel.name)))


def test_commit_on_success_and_rollback_on_domain_error(
    settings: Settings, session_factory: sessionmaker[Session]
) -> None:
    app = create_app(settings)

    @app.post("/test/write/{name}")
    def write(name: str, session: SessionDep, fail: bool = False) -> dict[str, str]:
        add_model(session, ModelCreate(name=name, threshold=0.5))  # flushed, not committed
        if fail:
            raise ConflictError("refused after writing")
        return {"written": name}

    with TestClient(app) as client:
        assert client.post("/test/write/kept").status_code == 200
        failed = client.post("/test/write/dropped", params={"fail": "true"})
        assert failed.status_code == 409
        assert failed.json()["error"]["message"] == "refused after writing"
    assert _model_names(session_factory) == ["kept"]


def test_a_failed_commit_is_an_error_response(
    settings: Settings, session_factory: sessionmaker[Session]
) -> None:
    """The violation surfaces only at commit (nothing flushed before): the client must see it."""
    app = create_app(settings)

    @app.post("/test/orphan")
    def orphan(session: SessionDep) -> dict[str, str]:
        add_model(session, ModelCreate(name="parent", threshold=0.5))
        start = datetime(2026, 11, 1, tzinfo=UTC)
        session.add(Window(model_id=10_000_000, window_start=start))  # no such model
        return {"status": "looks fine"}

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/test/orphan")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "internal_error", "message": "internal server error"}
    }
    assert _model_names(session_factory) == []


def test_an_unreachable_database_is_503_not_500() -> None:
    """Nothing listens on port 1: readiness and every database-backed request say 503."""
    unreachable = "postgresql+psycopg://calmon@127.0.0.1:1/calmon?connect_timeout=2"
    settings = settings_for(unreachable)
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
        models = client.get("/v1/models", headers={"Authorization": "Bearer calmon_x_y"})
    assert ready.status_code == 503
    assert ready.json()["error"]["message"] == (
        "the database is not ready for writes: the database cannot be reached"
    )
    assert models.status_code == 503
    assert models.json()["error"]["code"] == "unavailable"
