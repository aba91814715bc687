"""DELETE /v1/models/{name}: the model and all its data go, on both backends; its predictions
afterwards on PostgreSQL (the worker drops the model's tables of predictions and keys), while
other models' ingest goes on unblocked."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import WindowMetrics
from app.db.tables import Batch, ModelPurge, ModelSegment, MonitoredModel, Prediction, Window
from app.services.models import purge_predictions
from app.windows.compute import ComputeOptions
from app.worker.loop import Worker, WorkerConfig
from tests.support.api import AuthHeaders

DAY = datetime(2026, 11, 2, 10, tzinfo=UTC)


def _rows(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}-{i}",
            "timestamp": (DAY + timedelta(hours=i % 30)).isoformat().replace("+00:00", "Z"),
            "score": (i * 37 % 100) / 100,
            "label": int(i % 5 == 0),
            "segment": "FR" if i % 2 else "DE",
        }
        for i in range(n)
    ]


def _create(client: TestClient, headers: dict[str, str], name: str) -> None:
    spec = {"name": name, "threshold": 0.5, "granularity": "day", "timezone": "UTC"}
    response = client.post("/v1/models", json=spec, headers=headers)
    assert response.status_code == 201, response.text


def _post(client: TestClient, headers: dict[str, str], name: str, batch: str, n: int) -> int:
    body = {"batch_id": batch, "rows": _rows(f"{name}-{batch}", n)}
    response = client.post(f"/v1/models/{name}/batches", json=body, headers=headers)
    return int(response.status_code)


def _counts(factory: sessionmaker[Session], model_id: int) -> dict[str, int]:
    with factory() as session:
        return {
            table.__tablename__: session.scalar(
                select(func.count()).select_from(table).where(table.model_id == model_id)
            )
            or 0
            for table in (Prediction, Batch, Window, WindowMetrics, ModelSegment)
        }


def _model_id(factory: sessionmaker[Session], name: str) -> int:
    with factory() as session:
        found = session.scalar(select(MonitoredModel.id).where(MonitoredModel.name == name))
    assert found is not None
    return found


def test_a_deleted_model_leaves_nothing_and_its_name_is_free(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    backend: str,
) -> None:
    admin, ingest = auth_headers("admin"), auth_headers("ingest")
    for name in ("gone", "kept"):
        _create(client, admin, name)
        assert _post(client, ingest, name, "b-1", 300) == 201
    Worker(session_factory, WorkerConfig(options=ComputeOptions(replicates=50))).drain()
    gone, kept = _model_id(session_factory, "gone"), _model_id(session_factory, "kept")
    before_kept = _counts(session_factory, kept)
    assert all(_counts(session_factory, gone).values())  # every table has rows of it

    assert client.delete("/v1/models/gone", headers=ingest).status_code == 403
    deleted = client.delete("/v1/models/gone", headers=admin)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"name": "gone", "predictions_purged": backend == "sqlite"}
    assert client.delete("/v1/models/gone", headers=admin).status_code == 404
    assert client.get("/v1/models/gone", headers=auth_headers("read")).status_code == 404
    assert _post(client, ingest, "gone", "b-2", 10) == 404
    left = _counts(session_factory, gone)
    # At once: everything but the predictions; SQLite deletes those at once too.
    assert all(v == 0 for k, v in left.items() if k != "predictions")
    expected_left = 300 if backend == "postgresql" else 0
    assert left["predictions"] == expected_left

    chunks = 0
    while purge_predictions(session_factory, chunk_rows=70):
        chunks += 1
    assert chunks == (1 if backend == "postgresql" else 0)  # the model's tables, dropped whole
    assert _counts(session_factory, gone)["predictions"] == 0
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(ModelPurge)) == 0
    assert _counts(session_factory, kept) == before_kept

    _create(client, admin, "gone")  # the name is free again, for a model of its own
    assert _counts(session_factory, _model_id(session_factory, "gone"))["predictions"] == 0


def test_the_worker_purges_a_deleted_models_predictions(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin, ingest = auth_headers("admin"), auth_headers("ingest")
    _create(client, admin, "gone")
    assert _post(client, ingest, "gone", "b-1", 250) == 201
    gone = _model_id(session_factory, "gone")
    assert client.delete("/v1/models/gone", headers=admin).status_code == 200
    worker = Worker(session_factory, WorkerConfig(purge_chunk_rows=100))
    purges = 0
    while worker.purge_once():
        purges += 1
    assert _counts(session_factory, gone)["predictions"] == 0
    assert purges in (0, 1)  # SQLite had nothing left; PostgreSQL drops the tables at once


def test_another_models_ingest_is_not_blocked_by_a_delete(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    backend: str,
) -> None:
    """The purge waits for a transaction that reads predictions (held open, as a slow worker
    read would be) before it can detach the deleted model's tables; meanwhile another model's
    batch is stored at once, not after the purge."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: a delete and any ingest take turns")
    admin, ingest = auth_headers("admin"), auth_headers("ingest")
    for name in ("gone", "busy"):
        _create(client, admin, name)
        assert _post(client, ingest, name, "b-1", 2_000) == 201
    gone, busy = _model_id(session_factory, "gone"), _model_id(session_factory, "busy")
    assert client.delete("/v1/models/gone", headers=admin).status_code == 200

    with session_factory() as reader:
        assert _count_in_open_transaction(reader, busy) == 2_000
        purger = threading.Thread(target=purge_predictions, args=(session_factory, 1_500))
        purger.start()
        try:
            time.sleep(0.5)
            assert purger.is_alive()  # waiting for the reader to end
            assert _post(client, ingest, "busy", "b-2", 2_000) == 201
            # Stored while the purge still waited: the batch did not wait for it.
            assert purger.is_alive(), "another model's batch waited for a purge"
        finally:
            reader.rollback()
            purger.join(30)
    assert not purger.is_alive()
    assert _counts(session_factory, gone)["predictions"] == 0
    assert _counts(session_factory, busy)["predictions"] == 4_000


def _count_in_open_transaction(session: Session, model_id: int) -> int:
    """Rows of the model, read in ``session``'s transaction, which stays open."""
    query = select(func.count()).select_from(Prediction).where(Prediction.model_id == model_id)
    return int(session.scalar(query) or 0)
