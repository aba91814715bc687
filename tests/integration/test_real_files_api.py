"""Files as spreadsheets and shells write them, sent to the API (issue 26, point 4): a
semicolon or tab CSV, Unix seconds in a CSV, Excel dates and date-only timestamps refused with
a hint that works, a gzip body without its header, and one typing rule for numbers. Each test
failed on the code before the issue. Both backends, through the API."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.api import AuthHeaders

MODEL = "fraud-files"
ROWS = [("tx-1", "2026-11-02T10:00:00Z", 0.25), ("tx-2", "2026-11-02T11:30:00Z", 0.75)]
SECONDS = {"2026-11-02T10:00:00Z": 1_793_613_600, "2026-11-02T11:30:00Z": 1_793_619_000}


@pytest.fixture
def headers(client: TestClient, auth_headers: AuthHeaders) -> dict[str, str]:
    headers = auth_headers("admin", "ingest", "read")
    created = client.post("/v1/models", json={"name": MODEL, "threshold": 0.5}, headers=headers)
    assert created.status_code == 201, created.text
    return headers


def _csv(client: TestClient, headers: dict[str, str], body: str, batch_id: str) -> Any:
    return client.post(
        f"/v1/models/{MODEL}/batches",
        content=body.encode(),
        headers={**headers, "Content-Type": "text/csv", "X-Batch-Id": batch_id},
    )


def _refusal(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    detail: dict[str, Any] = response.json()["error"]["details"][0]
    return detail


def _iso_rows_unchanged(client: TestClient, headers: dict[str, str]) -> int:
    """Send ROWS as ISO-timestamped JSON: how many the store already holds as sent."""
    rows = [{"id": i, "timestamp": t, "score": s} for i, t, s in ROWS]
    answer = client.post(
        f"/v1/models/{MODEL}/batches", json={"batch_id": "iso", "rows": rows}, headers=headers
    )
    assert answer.status_code == 201, answer.text
    unchanged: int = answer.json()["rows_unchanged"]
    return unchanged


@pytest.mark.parametrize("separator", [";", "\t"])
def test_a_semicolon_or_tab_csv_with_a_bom_is_read_as_a_comma_one(
    client: TestClient, headers: dict[str, str], separator: str
) -> None:
    lines = [separator.join(("id", "timestamp", "score"))]
    lines += [separator.join((i, t, str(s))) for i, t, s in ROWS]
    body = "\ufeff" + "\r\n".join(lines) + "\r\n"  # as Excel writes it
    answer = _csv(client, headers, body, "excel")
    assert answer.status_code == 201, answer.text
    assert answer.json()["rows_inserted"] == 2
    assert _iso_rows_unchanged(client, headers) == 2


def test_unix_seconds_in_a_csv_are_the_same_instants_as_iso_text(
    client: TestClient, headers: dict[str, str]
) -> None:
    body = "id,timestamp,score\n" + "".join(f"{i},{SECONDS[t]},{s}\n" for i, t, s in ROWS)
    answer = _csv(client, headers, body, "seconds")
    assert answer.status_code == 201, answer.text
    assert _iso_rows_unchanged(client, headers) == 2
    # Mixed in one column, and with a fraction: each field by what it reads as.
    mixed = "id,timestamp,score\ntx-3,1793613600.5,0.5\ntx-4,2026-11-02T10:00:00Z,0.5\n"
    assert _csv(client, headers, mixed, "mixed").status_code == 201


def test_an_excel_date_is_refused_with_an_accepted_example(
    client: TestClient, headers: dict[str, str]
) -> None:
    detail = _refusal(_csv(client, headers, "id,timestamp,score\ntx-1,02/11/2026 10:00,0.5\n", "x"))
    assert (detail["row"], detail["field"]) == (0, "timestamp")
    assert "'02/11/2026 10:00' is not an ISO-8601 timestamp" in detail["message"]
    assert "'2026-11-26T14:03:00Z'" in detail["message"]
    assert "1795701780" in detail["message"]  # and what Unix seconds look like


def test_a_date_only_timestamp_gets_a_hint_that_is_accepted(
    client: TestClient, headers: dict[str, str]
) -> None:
    detail = _refusal(_csv(client, headers, "id,timestamp,score\ntx-1,2026-11-02,0.5\n", "x"))
    assert "send '2026-11-02T00:00:00Z' if it is UTC" in detail["message"]
    followed = _csv(client, headers, "id,timestamp,score\ntx-1,2026-11-02T00:00:00Z,0.5\n", "y")
    assert followed.status_code == 201, followed.text


def test_a_decimal_comma_is_named_not_guessed(client: TestClient, headers: dict[str, str]) -> None:
    body = "id;timestamp;score\ntx-1;2026-11-02T10:00:00Z;0,87\n"
    detail = _refusal(_csv(client, headers, body, "x"))
    assert (detail["row"], detail["field"]) == (0, "score")
    assert "write its decimal mark as a point (0.87)" in detail["message"]


def test_a_gzip_body_without_content_encoding_is_read(
    client: TestClient, headers: dict[str, str]
) -> None:
    rows = [{"id": i, "timestamp": t, "score": s} for i, t, s in ROWS]
    json_body = gzip.compress(
        b'{"batch_id": "gz", "rows": ' + str(rows).replace("'", '"').encode() + b"}"
    )
    sent = client.post(
        f"/v1/models/{MODEL}/batches",
        content=json_body,
        headers={**headers, "Content-Type": "application/json"},
    )
    assert sent.status_code == 201, sent.text
    csv_body = gzip.compress(("id,timestamp,score\n" + "tx-9,1793613600,0.5\n").encode())
    as_csv = client.post(
        f"/v1/models/{MODEL}/batches",
        content=csv_body,
        headers={**headers, "Content-Type": "text/csv", "X-Batch-Id": "gz-csv"},
    )
    assert as_csv.status_code == 201, as_csv.text


def test_a_sniffed_gzip_body_keeps_the_gzip_limits(
    client: TestClient, headers: dict[str, str]
) -> None:
    url = f"/v1/models/{MODEL}/batches"
    json_headers = {**headers, "Content-Type": "application/json"}
    bomb = gzip.compress(b'{"batch_id": "b", "rows": [' + b" " * (8 << 20) + b"]}")
    refused = client.post(url, content=bomb, headers=json_headers)
    assert refused.status_code == 413, refused.text
    assert "CALMON_MAX_GZIP_RATIO" in refused.json()["error"]["message"]
    members = b"".join(gzip.compress(b" ") for _ in range(65)) + gzip.compress(b"{}")
    many = client.post(url, content=members, headers=json_headers)
    assert many.status_code == 413, many.text
    assert "CALMON_MAX_GZIP_MEMBERS" in many.json()["error"]["message"]


def test_a_number_is_a_json_number_in_settings_and_rows_alike(
    client: TestClient, headers: dict[str, str]
) -> None:
    quoted = client.post("/v1/models", json={"name": "quoted", "threshold": "0.5"}, headers=headers)
    assert quoted.status_code == 422, quoted.text
    detail = quoted.json()["error"]["details"][0]
    assert detail["field"].endswith("threshold")
    assert "must be a JSON number, not a string" in detail["message"]
    patched = client.patch(f"/v1/models/{MODEL}", json={"reference_windows": "14"}, headers=headers)
    assert patched.status_code == 422, patched.text
    assert "must be a JSON number" in patched.json()["error"]["details"][0]["message"]

    row = {"id": "tx-1", "timestamp": "2026-11-02T10:00:00Z", "score": "0.5"}
    batch = {"batch_id": "quoted", "rows": [row]}
    detail = _refusal(client.post(f"/v1/models/{MODEL}/batches", json=batch, headers=headers))
    assert (detail["row"], detail["field"]) == (0, "score")
    assert "must be a JSON number, not the string '0.5'" in detail["message"]
    seconds = {"batch_id": "q", "rows": [dict(row, score=0.5, timestamp="1793613600")]}
    detail = _refusal(client.post(f"/v1/models/{MODEL}/batches", json=seconds, headers=headers))
    assert "send Unix seconds as a JSON number (1793613600" in detail["message"]
