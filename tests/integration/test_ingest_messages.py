"""What a refused batch or label update says (issue 13): the label endpoint speaks of labels, a
CSV chargeback feed is read as CSV, and NaN, a millisecond epoch or a future timestamp are
named by row and field with what is wrong. Both backends, through the API."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.api import AuthHeaders

MODEL = "fraud-msg"
NOW_ISH = 1_793_000_000  # 2026-10-26, inside the default accepted range


@pytest.fixture
def headers(client: TestClient, auth_headers: AuthHeaders) -> dict[str, str]:
    headers = auth_headers("admin", "ingest", "read")
    created = client.post("/v1/models", json={"name": MODEL, "threshold": 0.5}, headers=headers)
    assert created.status_code == 201, created.text
    rows = [{"id": f"tx-{i}", "timestamp": NOW_ISH + i, "score": 0.1 * i} for i in range(4)]
    stored = client.post(
        f"/v1/models/{MODEL}/batches", json={"batch_id": "b0", "rows": rows}, headers=headers
    )
    assert stored.status_code == 201, stored.text
    return headers


def _error(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_label_errors_speak_of_labels(client: TestClient, headers: dict[str, str]) -> None:
    body = {"labels": [{"id": "tx-1", "label": 1}, {"id": "tx-2", "label": None}]}
    error = _error(client.post(f"/v1/models/{MODEL}/labels", json=body, headers=headers))
    assert error["code"] == "invalid_labels"
    assert error["message"].startswith("label update refused, no label was changed: 1 invalid")
    assert error["details"] == [
        {
            "row": 1,
            "field": "label",
            "message": "must be 0 or 1 (a label update cannot make a label unknown)",
        }
    ]


def test_a_csv_chargeback_feed_is_accepted(client: TestClient, headers: dict[str, str]) -> None:
    url = f"/v1/models/{MODEL}/labels"
    feed = "id,label\ntx-1,1\ntx-2,0\ntx-404,1\n"
    csv_headers = {**headers, "Content-Type": "text/csv"}
    response = client.post(url, content=feed.encode(), headers=csv_headers)
    assert response.status_code == 200, response.text
    assert response.json()["rows_updated"] == 2
    assert response.json()["unknown_ids"] == ["tx-404"]

    # Columns in any order, 1.0 as pandas writes it; a bad line is named by its row.
    again = client.post(url, content=b"label,id\n1.0,tx-3\n", headers=csv_headers)
    assert again.status_code == 200, again.text
    assert again.json()["rows_updated"] == 1
    bad = _error(client.post(url, content=b"id,label\ntx-1,1\ntx-2,yes\n", headers=csv_headers))
    assert bad["code"] == "invalid_labels"
    assert bad["details"][0]["row"] == 1
    assert bad["details"][0]["field"] == "label"
    extra = _error(client.post(url, content=b"id,label,amount\ntx-1,1,9\n", headers=csv_headers))
    assert "unknown column 'amount'" in extra["details"][0]["message"]

    # The same feed sent without its Content-Type says what to do.
    as_json = _error(client.post(url, content=feed.encode(), headers=headers))
    assert "Content-Type: text/csv" in as_json["details"][0]["message"]


def test_nan_in_row_json_names_the_row_and_field(
    client: TestClient, headers: dict[str, str]
) -> None:
    rows = ",".join(
        f'{{"id": "n{i}", "timestamp": {NOW_ISH + i}, "score": {"NaN" if i == 7 else 0.5}}}'
        for i in range(10)
    )
    body = f'{{"batch_id": "nan", "rows": [{rows}]}}'.encode()
    json_headers = {**headers, "Content-Type": "application/json"}
    response = client.post(f"/v1/models/{MODEL}/batches", content=body, headers=json_headers)
    error = _error(response)
    assert error["details"] == [
        {
            "row": 7,
            "field": "score",
            "message": "NaN is not valid JSON (JSON has no NaN or Infinity): send a finite "
            "number, or null where the value may be unknown",
        }
    ]
    labels = b'{"labels": [{"id": "tx-1", "label": Infinity}]}'
    label_error = _error(
        client.post(f"/v1/models/{MODEL}/labels", content=labels, headers=json_headers)
    )
    assert label_error["details"][0]["row"] == 0
    assert label_error["details"][0]["field"] == "label"
    assert label_error["details"][0]["message"].startswith("Infinity is not valid JSON")


def test_timestamp_errors_show_the_value_and_the_limit(
    client: TestClient, headers: dict[str, str]
) -> None:
    rows = [
        {"id": "ms", "timestamp": 1_795_370_000_000, "score": 0.5},
        {"id": "future", "timestamp": "2200-01-01T00:00:00+02:00", "score": 0.5},
    ]
    error = _error(
        client.post(
            f"/v1/models/{MODEL}/batches", json={"batch_id": "t", "rows": rows}, headers=headers
        )
    )
    millis, future = error["details"]
    assert millis["row"] == 0
    assert millis["message"] == (
        "Unix seconds 1795370000000 out of range: it looks like milliseconds since the epoch "
        "(2026-11-22T17:53:20Z); send seconds (1795370000) or an ISO-8601 string"
    )
    assert future["row"] == 1
    assert future["message"].startswith(
        "'2200-01-01T00:00:00+02:00' (2199-12-31T22:00:00Z) is after the latest accepted, "
        "now + CALMON_MAX_FUTURE ("
    )
    assert future["message"].endswith("Z)")
