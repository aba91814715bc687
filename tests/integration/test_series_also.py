"""``GET .../metrics?also=...`` returns other metrics' series beside the asked one, each equal
to what its own request answers, so the model page asks once for its several charts (issue 27,
the model page under 1 s). Both backends."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.windows.compute import ComputeOptions
from app.worker.loop import Worker, WorkerConfig
from tests.support.api import AuthHeaders

MODEL = "fraud-also"
DAY = 1_793_000_000  # 2026-10-26T07:33:20Z
OTHERS = ["f1", "value_recall", "net_savings"]


def _seed(client: TestClient, headers: dict[str, str]) -> None:
    model = {"name": MODEL, "threshold": 0.5, "review_cost": 1.0}
    assert client.post("/v1/models", json=model, headers=headers).status_code == 201
    rows: list[dict[str, Any]] = [
        {
            "id": f"r{day}-{i}",
            "timestamp": DAY + 86_400 * day + i,
            "score": ((i * 7 + day) % 10) / 10,
            "label": int((i + day) % 10 >= 8),
            "amount": 10.0 + i,
            "segment": "FR" if i % 3 else "DE",
        }
        for day in range(3)
        for i in range(60)
    ]
    response = client.post(
        f"/v1/models/{MODEL}/batches", json={"batch_id": "b1", "rows": rows}, headers=headers
    )
    assert response.status_code == 201, response.text


def test_also_returns_each_metric_as_its_own_request_does(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin = auth_headers("admin", "ingest", "read")
    _seed(client, admin)
    Worker(session_factory, WorkerConfig(options=ComputeOptions(replicates=50))).drain()
    url = f"/v1/models/{MODEL}/metrics"
    for segment in ("all", "FR"):
        params: dict[str, Any] = {"metric": "average_precision", "segment": segment}
        alone = client.get(url, params=params, headers=admin).json()
        together = client.get(url, params={**params, "also": OTHERS}, headers=admin).json()
        assert len(together["points"]) == 3
        assert together["also"].keys() == set(OTHERS)
        assert {**together, "also": {}} == alone
        for other in OTHERS:
            own = client.get(url, params={**params, "metric": other}, headers=admin).json()
            assert together["also"][other] == own["points"], other
        assert alone["also"] == {}


def test_also_naming_an_unknown_metric_is_a_422_listing_the_valid_ones(
    client: TestClient, auth_headers: AuthHeaders
) -> None:
    admin = auth_headers("admin", "ingest", "read")
    _seed(client, admin)
    response = client.get(
        f"/v1/models/{MODEL}/metrics",
        params={"metric": "average_precision", "also": ["f1", "nonsense"]},
        headers=admin,
    )
    assert response.status_code == 422, response.text
    assert "f1" in response.json()["error"]["valid_metrics"]
