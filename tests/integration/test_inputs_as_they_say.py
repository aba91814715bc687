"""Inputs taken as what they say: a number is no date, a blank is no batch id, and a 405 names
every method of its path."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from fastapi.testclient import TestClient

from tests.support.api import AuthHeaders

MODEL = {"name": "fraud", "threshold": 0.5}


class Call(NamedTuple):
    method: str
    path: str
    params: dict[str, str]
    body: dict[str, Any] | None
    field: str


@pytest.mark.parametrize(
    "call",
    [
        Call("GET", "/v1/models/fraud/metrics", {"to": "0.5"}, None, "to"),
        Call("GET", "/v1/models/fraud/metrics", {"from": "1700000000"}, None, "from"),
        Call("GET", "/v1/models/fraud/windows/0", {}, None, "window_start"),
        Call("GET", "/v1/models/fraud/metric-catalogue", {"from": "-3e5"}, None, "from"),
        Call("GET", "/v1/models/fraud/compare", {"challenger": "fraud", "to": "12"}, None, "to"),
        Call("POST", "/v1/models/fraud/whatif", {}, {"from": 0}, "from"),
        Call(
            "POST",
            "/v1/models/fraud/reference",
            {},
            {"kind": "automatic", "start": 0},
            "automatic.start",
        ),
        Call(
            "POST",
            "/v1/models/fraud/reference",
            {},
            {"kind": "period", "start": "2026-01-01", "end": 20260131},
            "period.end",
        ),
        Call(
            "PATCH",
            "/v1/models/fraud",
            {},
            {"pi0": {"policy": "reference", "start": 1, "end": "2026-01-31"}},
            "pi0.reference.start",
        ),
    ],
)
def test_a_number_is_no_date(client: TestClient, auth_headers: AuthHeaders, call: Call) -> None:
    headers = auth_headers("admin", "read")
    assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
    response = client.request(
        call.method, call.path, params=call.params, json=call.body, headers=headers
    )
    field = call.field
    assert response.status_code == 422, response.text
    details = response.json()["error"]["details"]
    assert any(d["field"].startswith(field) and "not a number" in d["message"] for d in details), (
        details
    )


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        # Valid ISO 8601, but before year 1 (or after 9999) in UTC: schemathesis found the 500.
        ("/v1/models/fraud/metrics", {"from": "0001-01-01T00:00:01+01:17"}, "from"),
        ("/v1/models/fraud/metrics", {"to": "9999-12-31T23:59:59-01:00"}, "to"),
        ("/v1/models/fraud/windows/0001-01-01T00:30:00+01:00", {}, "window_start"),
        # The analyses' periods too (schemathesis found the 500 on the catalogue's `from`).
        ("/v1/models/fraud/metric-catalogue", {"from": "0001-01-01T03:02:02+07:02"}, "from"),
        ("/v1/models/fraud/metric-trust", {"to": "9999-12-31T23:59:59-01:00"}, "to"),
        ("/v1/models/fraud/segments/compare", {"from": "0001-01-01T00:00:01+01:17"}, "from"),
        ("/v1/models/fraud/compare", {"to": "9999-12-31T23:59:59-01:00"}, "to"),
    ],
)
def test_an_instant_outside_utcs_years_is_a_422(
    client: TestClient, auth_headers: AuthHeaders, path: str, params: dict[str, str], field: str
) -> None:
    headers = auth_headers("admin", "read")
    assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
    response = client.get(path, params=params, headers=headers)
    assert response.status_code == 422, response.text
    details = response.json()["error"]["details"]
    assert any(d["field"] == field and "in UTC" in d["message"] for d in details), details


@pytest.mark.parametrize(
    "call",
    [
        Call(
            "GET",
            "/v1/models/fraud/metric-catalogue",
            {"from": "2026-01-01T00:00:00"},
            None,
            "from",
        ),
        Call("GET", "/v1/models/fraud/metric-trust", {"to": "2026-02-01T00:00:00"}, None, "to"),
        Call("GET", "/v1/models/fraud/segments/compare", {"from": "2026-01-01"}, None, "from"),
        Call("POST", "/v1/models/fraud/whatif", {}, {"to": "2026-02-01T00:00:00"}, "to"),
    ],
)
def test_an_instant_without_its_offset_is_a_422(
    client: TestClient, auth_headers: AuthHeaders, call: Call
) -> None:
    """An analysis's period has the series' instants: a date-time without its UTC offset is
    refused by name (it reached the database and was a 500)."""
    headers = auth_headers("admin", "read")
    assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
    response = client.request(
        call.method, call.path, params=call.params, json=call.body, headers=headers
    )
    assert response.status_code == 422, response.text
    details = response.json()["error"]["details"]
    assert any(d["field"] == call.field for d in details), details


def test_iso_dates_still_work(client: TestClient, auth_headers: AuthHeaders) -> None:
    headers = auth_headers("admin", "read")
    assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
    series = client.get(
        "/v1/models/fraud/metrics",
        params={"from": "2026-01-01T00:00:00Z", "to": "2026-02-01T00:00:00+01:00"},
        headers=headers,
    )
    assert series.status_code == 200, series.text


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/models/fraud", "DELETE, GET, PATCH"),
        ("DELETE", "/v1/models", "GET, POST"),
        ("GET", "/v1/models/fraud/batches", "POST"),
    ],
)
def test_405_names_every_method_of_the_path(
    client: TestClient, auth_headers: AuthHeaders, method: str, path: str, allowed: str
) -> None:
    response = client.request(method, path, headers=auth_headers("read"))
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allowed
    assert response.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("batch_id", ["", " ", "\t"], ids=repr)
def test_a_blank_batch_id_is_no_batch_id(
    client: TestClient, auth_headers: AuthHeaders, batch_id: str
) -> None:
    headers = auth_headers("admin", "ingest", "read")
    assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
    response = client.post(
        "/v1/models/fraud/batches",
        content="id,timestamp,score,label\na,2026-01-01T00:00:00Z,0.3,0\n",
        headers={**headers, "Content-Type": "text/csv", "X-Batch-Id": batch_id},
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"] == "batch_id"
