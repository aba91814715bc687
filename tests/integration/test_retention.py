"""Retention (``retention_windows``): raw predictions of old windows are deleted by the worker,
while everything computed from them stays: the series, pi0, the stored metrics and sketches.
A window whose rows are gone keeps its values (never recomputed from no rows), refuses new
rows, and a late label for one of its ids is listed in unknown_ids. Both backends."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import Pi0Version, WindowMetrics
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import Prediction
from app.services.models import get_model
from app.windows.compute import ComputeOptions
from app.worker.loop import Worker, WorkerConfig
from tests.support.api import AuthHeaders

MODEL = "kept-short"


def _today() -> datetime:
    """Today's UTC midnight, read when a test starts: retention counts back from the clock, and
    a value read when the module was imported is yesterday's for a run that crosses midnight."""
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _rows(day: int, n: int, today: datetime) -> list[dict[str, Any]]:
    """``n`` rows of the day ``day`` days before ``today`` (UTC), every 4th positive."""
    start = today - timedelta(days=day) + timedelta(minutes=5)
    return [
        {
            "id": f"d{day}-{i}",
            "timestamp": (start + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
            "score": round((i * 37 % 100) / 100 + (0.3 if i % 4 == 0 else 0), 2) % 1,
            "label": int(i % 4 == 0),
        }
        for i in range(n)
    ]


def _stored(factory: sessionmaker[Session]) -> dict[str, Any]:
    with factory() as session:
        metrics = {
            (row.window_start, row.segment): (row.rows_total, row.positives, row.sketch, row.pi0)
            for row in session.scalars(select(WindowMetrics))
        }
        days = session.execute(
            select(Prediction.window_start, func.count()).group_by(Prediction.window_start)
        ).all()
        pi0 = session.scalars(select(Pi0Version.value).order_by(Pi0Version.version)).all()
    return {"metrics": metrics, "rows": dict(days), "pi0": list(pi0)}


def test_old_raw_rows_go_and_what_was_computed_from_them_stays(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin, ingest, read = auth_headers("admin"), auth_headers("ingest"), auth_headers("read")
    today = _today()
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "day", "timezone": "UTC"}
    assert client.post("/v1/models", json=spec, headers=admin).status_code == 201
    for day in range(6):
        body = {"batch_id": f"day-{day}", "rows": _rows(day, 200, today)}
        assert (
            client.post(f"/v1/models/{MODEL}/batches", json=body, headers=ingest).status_code == 201
        )
    worker = Worker(session_factory, WorkerConfig(options=ComputeOptions(replicates=50)))
    worker.drain()
    assert not worker.expire_once()  # no retention set: nothing expires
    series_url = f"/v1/models/{MODEL}/metrics"
    series = client.get(series_url, headers=read).json()
    before = _stored(session_factory)
    assert len(before["rows"]) == 6

    patched = client.patch(f"/v1/models/{MODEL}", json={"retention_windows": 2}, headers=admin)
    assert patched.status_code == 200, patched.text
    assert patched.json()["retention_windows"] == 2
    worker.drain()  # the PATCH re-dirtied the newest window
    while worker.expire_once():
        pass
    after = _stored(session_factory)
    kept_from = today - timedelta(days=2)
    assert sorted(after["rows"]) == [kept_from, kept_from + timedelta(days=1), today]
    assert after["metrics"] == before["metrics"]
    assert after["pi0"] == before["pi0"]
    assert client.get(series_url, headers=read).json() == series
    model = client.get(f"/v1/models/{MODEL}", headers=read).json()
    assert model["raw_kept_from"] == kept_from.isoformat().replace("+00:00", "Z")

    # A change that recomputes every window reaches only those whose rows are kept.
    assert (
        client.patch(f"/v1/models/{MODEL}", json={"threshold": 0.6}, headers=admin).status_code
        == 200
    )
    worker.drain()
    recomputed = _stored(session_factory)["metrics"]
    for (start, segment), values in before["metrics"].items():
        if start < kept_from:
            assert recomputed[(start, segment)] == values  # not erased by a recount of no rows

    # A row for an expired window is refused, naming it; a late label for one is unknown.
    late = {"batch_id": "late", "rows": [*_rows(0, 1, today), *_rows(4, 1, today)]}
    refused = client.post(f"/v1/models/{MODEL}/batches", json=late, headers=ingest)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == "window_expired"
    assert error["details"][0]["row"] == 1
    labels = [{"id": "d4-0", "label": 1}, {"id": "d1-0", "label": 0}]
    answer = client.post(f"/v1/models/{MODEL}/labels", json=labels, headers=ingest).json()
    assert answer["unknown_ids"] == ["d4-0"]
    assert answer["rows_updated"] == 1


def test_a_batch_in_flight_keeps_its_window_from_the_cutoff(
    backend: str,
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
) -> None:
    """The race of a cutoff moving while a batch is in flight: the batch checked its window
    against the old cutoff and marked it dirty, uncommitted; retention must wait for it (its
    lock of the model row) and then stop before that window, not cut it (its rows would be
    acknowledged, then deleted and never counted). PostgreSQL: SQLite has one writer at a time."""
    if backend != "postgresql":
        pytest.skip("SQLite serialises the two writers itself")
    admin, ingest = auth_headers("admin"), auth_headers("ingest")
    today = _today()
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "day", "timezone": "UTC"}
    assert client.post("/v1/models", json=spec, headers=admin).status_code == 201
    body = {"batch_id": "day-5", "rows": _rows(5, 50, today)}
    assert client.post(f"/v1/models/{MODEL}/batches", json=body, headers=ingest).status_code == 201
    worker = Worker(session_factory, WorkerConfig(options=ComputeOptions(replicates=50)))
    worker.drain()
    patched = client.patch(f"/v1/models/{MODEL}", json={"retention_windows": 2}, headers=admin)
    assert patched.status_code == 200, patched.text
    worker.drain()

    in_flight_window = today - timedelta(days=4)
    with session_factory() as batch:  # what an ingest batch holds until it commits
        model = get_model(batch, MODEL, share=True)
        WindowQueueRepository(batch).mark_dirty(model.id, [in_flight_window], datetime.now(UTC))
        expiring = threading.Thread(target=worker.expire_once)
        expiring.start()
        expiring.join(timeout=0.5)  # it waits for the batch's lock (or has not started yet)
        batch.commit()
    expiring.join(timeout=30)
    assert not expiring.is_alive()
    kept = client.get(f"/v1/models/{MODEL}", headers=auth_headers("read")).json()["raw_kept_from"]
    assert kept == in_flight_window.isoformat().replace("+00:00", "Z")
