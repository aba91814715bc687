"""Hostile inputs get a clear 4xx, never a 5xx (issue 16, finding 1), on both backends.

A client that retries 5xx would retry these forever, so each one must be refused as the
client's mistake, naming the field.
"""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.support.api import AuthHeaders

MODEL = "fraud-v1"
ROW = {"id": "tx-1", "timestamp": "2026-11-02T10:00:00Z", "score": 0.5, "label": 1}
NUL = "\x00"


@pytest.fixture
def headers(auth_headers: AuthHeaders) -> dict[str, str]:
    return auth_headers("admin", "ingest", "read")


@pytest.fixture
def model(client: TestClient, headers: dict[str, str]) -> str:
    response = client.post("/v1/models", json={"name": MODEL, "threshold": 0.5}, headers=headers)
    assert response.status_code == 201, response.text
    return MODEL


def _refused(response: httpx.Response, field: str | None = None) -> dict[str, Any]:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    body: dict[str, Any] = response.json()["error"]
    if field is not None:
        fields = [detail.get("field") for detail in body.get("details", [])]
        assert field in fields, body
    return body


def _batch(client: TestClient, headers: dict[str, str], body: Any, **kwargs: Any) -> Any:
    return client.post(f"/v1/models/{MODEL}/batches", json=body, headers=headers, **kwargs)


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"batch_id": f"b{NUL}1", "rows": [ROW]}, "batch_id"),
        ({"batch_id": "b1", "rows": [{**ROW, "id": f"tx{NUL}1"}]}, "id"),
        ({"batch_id": "b1", "rows": [{**ROW, "segment": f"FR{NUL}"}]}, "segment"),
        ({"batch_id": "b1", "columns": {k: [v] for k, v in {**ROW, "id": NUL}.items()}}, "id"),
    ],
    ids=["batch_id", "row_id", "segment", "columnar_id"],
)
def test_nul_in_a_json_batch_is_refused(
    client: TestClient, headers: dict[str, str], body: Any, field: str
) -> None:
    error = _refused(_batch(client, headers, body), field)
    assert "NUL" in str(error)


@pytest.mark.usefixtures("model")
def test_nul_in_a_csv_batch_and_in_labels_is_refused(
    client: TestClient, headers: dict[str, str]
) -> None:
    csv_body = f"id,timestamp,score,segment\ntx{NUL}1,2026-11-02T10:00:00Z,0.5,FR\n"
    response = client.post(
        f"/v1/models/{MODEL}/batches?batch_id=b1",
        content=csv_body.encode(),
        headers={**headers, "Content-Type": "text/csv"},
    )
    _refused(response, "id")
    labels = client.post(
        f"/v1/models/{MODEL}/labels",
        json={"labels": [{"id": f"tx{NUL}", "label": 1}]},
        headers=headers,
    )
    _refused(labels, "id")


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize(
    "url",
    [
        f"/v1/models/{MODEL}/metrics?segment=FR%00",
        f"/v1/models/{MODEL}/metrics?metric=average_precision%00",
        "/v1/models/fraud%00v1",
        "/v1/models/fraud%00v1/status",
        f"/v1/models/{MODEL}/windows/2026-11-02T00:00:00Z?segment=%00",
    ],
)
def test_nul_in_a_path_or_query_parameter_is_refused(
    client: TestClient, headers: dict[str, str], url: str
) -> None:
    error = _refused(client.get(url, headers=headers))
    assert "NUL" in error["message"]


def test_nul_in_a_pydantic_body_is_refused(client: TestClient, headers: dict[str, str]) -> None:
    response = client.post(
        "/v1/tokens", json={"name": f"ci{NUL}", "scopes": ["read"]}, headers=headers
    )
    _refused(response, "name")


@pytest.mark.usefixtures("model")
def test_nul_in_the_batch_id_query_parameter_is_refused(
    client: TestClient, headers: dict[str, str]
) -> None:
    _refused(_batch(client, headers, {"rows": [ROW]}, params={"batch_id": f"b{NUL}"}))


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize(
    "query",
    [
        "from=2026-11-01",
        "to=2026-11-01",
        "from=2026-11-01T00:00:00",
        "from=not-a-date",
    ],
)
def test_naive_or_date_only_bounds_are_refused(
    client: TestClient, headers: dict[str, str], query: str
) -> None:
    response = client.get(f"/v1/models/{MODEL}/metrics?{query}", headers=headers)
    error = _refused(response)
    assert response.status_code == 422
    assert "from" in error["message"] or "to" in error["message"]


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize("start", ["2026-11-02", "2026-11-02T00:00:00"])
def test_a_naive_window_start_is_refused(
    client: TestClient, headers: dict[str, str], start: str
) -> None:
    response = client.get(f"/v1/models/{MODEL}/windows/{start}", headers=headers)
    _refused(response, "window_start")


@pytest.mark.usefixtures("model")
def test_a_header_only_csv_is_refused(client: TestClient, headers: dict[str, str]) -> None:
    response = client.post(
        f"/v1/models/{MODEL}/batches?batch_id=b1",
        content=b"id,timestamp,score\n",
        headers={**headers, "Content-Type": "text/csv"},
    )
    _refused(response, "rows")


@pytest.mark.usefixtures("model")
def test_a_csv_field_past_the_csv_module_limit_is_refused(
    client: TestClient, headers: dict[str, str]
) -> None:
    body = f"id,timestamp,score\n{'x' * 131_073},2026-11-02T10:00:00Z,0.5\n".encode()
    response = client.post(
        f"/v1/models/{MODEL}/batches?batch_id=b1",
        content=gzip.compress(body),
        headers={**headers, "Content-Type": "text/csv", "Content-Encoding": "gzip"},
    )
    error = _refused(response)
    assert response.status_code == 422
    assert error["details"][0]["row"] == 0


@pytest.mark.parametrize(
    "changes",
    [
        {"pi0": {"policy": "historical", "lookback_windows": 2**31}},
        {"pi0": {"policy": "historical", "lookback_windows": 2**63}},
        {"reference_windows": 2**31},
    ],
)
def test_integer_settings_past_the_database_range_are_refused(
    client: TestClient, headers: dict[str, str], changes: dict[str, Any]
) -> None:
    created = client.post(
        "/v1/models", json={"name": MODEL, "threshold": 0.5, **changes}, headers=headers
    )
    _refused(created)
    assert (
        client.post(
            "/v1/models", json={"name": MODEL, "threshold": 0.5}, headers=headers
        ).status_code
        == 201
    )
    _refused(client.patch(f"/v1/models/{MODEL}", json=changes, headers=headers))


def test_a_token_id_past_the_database_range_is_refused(
    client: TestClient, headers: dict[str, str]
) -> None:
    _refused(client.delete(f"/v1/tokens/{2**31}", headers=headers), "token_id")
