"""A model's segments can be listed, and a read naming a segment it lacks is a 404 that lists
the real ones instead of a 200 with no points (issue 13). Both backends."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from app.db.tables import ModelSegment
from app.windows.compute import ComputeOptions
from app.worker.loop import Worker, WorkerConfig
from tests.support.api import AuthHeaders

MODEL = "fraud-seg"
DAY = 1_793_000_000  # 2026-10-26T07:33:20Z


def _post_batch(client: TestClient, headers: dict[str, str]) -> None:
    rows: list[dict[str, Any]] = [
        {
            "id": f"r{i}",
            "timestamp": DAY + i,
            "score": (i % 10) / 10,
            "label": int(i % 10 >= 8),
            "segment": "FR" if i % 3 else "DE",
        }
        for i in range(60)
    ]
    response = client.post(
        f"/v1/models/{MODEL}/batches", json={"batch_id": "b1", "rows": rows}, headers=headers
    )
    assert response.status_code == 201, response.text


def test_segments_are_listed_with_their_computed_windows(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin = auth_headers("admin", "ingest", "read")
    model = {"name": MODEL, "threshold": 0.5}
    assert client.post("/v1/models", json=model, headers=admin).status_code == 201
    url = f"/v1/models/{MODEL}/segments"

    fresh = client.get(url, headers=admin)
    assert fresh.status_code == 200, fresh.text
    assert fresh.json() == {
        "model": MODEL,
        "segments": [{"segment": "all", "windows": 0, "rows": 0, "newest_window": None}],
    }

    _post_batch(client, admin)
    waiting = client.get(url, headers=admin).json()
    assert [s["segment"] for s in waiting["segments"]] == ["all", "DE", "FR"]
    assert all(s["windows"] == 0 for s in waiting["segments"])

    Worker(session_factory, WorkerConfig(options=ComputeOptions(replicates=50))).drain()
    listed = client.get(url, headers=auth_headers("read")).json()["segments"]
    assert listed == [
        {"segment": "all", "windows": 1, "rows": 60, "newest_window": "2026-10-26T00:00:00Z"},
        {"segment": "DE", "windows": 1, "rows": 20, "newest_window": "2026-10-26T00:00:00Z"},
        {"segment": "FR", "windows": 1, "rows": 40, "newest_window": "2026-10-26T00:00:00Z"},
    ]


def test_an_unknown_segment_is_a_404_listing_the_known_ones(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin = auth_headers("admin", "ingest", "read")
    assert client.post("/v1/models", json={"name": MODEL, "threshold": 0.5}, headers=admin)
    _post_batch(client, admin)
    Worker(session_factory, WorkerConfig(options=ComputeOptions(replicates=50))).drain()

    known = client.get(f"/v1/models/{MODEL}/metrics", params={"segment": "FR"}, headers=admin)
    assert known.status_code == 200
    assert len(known.json()["points"]) == 1

    for path in ("metrics", "windows/2026-10-26T00:00:00Z"):
        response = client.get(f"/v1/models/{MODEL}/{path}", params={"segment": "fr"}, headers=admin)
        assert response.status_code == 404, response.text
        error = response.json()["error"]
        assert error["code"] == "not_found"
        assert "no segment 'fr'" in error["message"]
        assert "all, DE, FR" in error["message"]
        assert error["known_segments"] == ["all", "DE", "FR"]
        assert error["details"] == [{"field": "segment", "message": "unknown segment 'fr'"}]

    # A segment with computed windows is known even if model_segments lacks it (rows stored by
    # other means than ingestion, as the worker tests do).
    with session_factory.begin() as session:
        session.execute(delete(ModelSegment))
    again = client.get(f"/v1/models/{MODEL}/metrics", params={"segment": "FR"}, headers=admin)
    assert again.status_code == 200
    listed = client.get(f"/v1/models/{MODEL}/segments", headers=admin).json()["segments"]
    assert [s["segment"] for s in listed] == ["all", "DE", "FR"]

    # 'all' is the whole window: always there, even before any batch.
    assert client.post("/v1/models", json={"name": "empty", "threshold": 0.5}, headers=admin)
    empty = client.get("/v1/models/empty/metrics", headers=admin)
    assert empty.status_code == 200
    assert empty.json()["points"] == []
