"""The body limits through HTTP (issue 16, finding 2): refused while the body is read and
decoded, before it is parsed whole; both backends."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import msgspec
import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from tests.support.api import AuthHeaders
from tests.support.databases import settings_for

MODEL = "fraud-v1"
ROW = {"id": "a", "timestamp": "2026-11-02T10:00:00Z", "score": 0.9, "label": 1}


@pytest.fixture
def small_client(database_url: str) -> Iterator[TestClient]:
    settings = settings_for(database_url, max_rows_per_request=1_000)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def headers(small_client: TestClient, auth_headers: AuthHeaders) -> dict[str, str]:
    admin = auth_headers("admin", "ingest")
    model = {"name": MODEL, "threshold": 0.5}
    assert small_client.post("/v1/models", json=model, headers=admin).status_code == 201
    return {**admin, "Content-Type": "application/json", "Content-Encoding": "gzip"}


def test_too_many_rows_are_refused_before_the_body_is_parsed(
    small_client: TestClient, headers: dict[str, str]
) -> None:
    # Never valid JSON (it does not end): a 413 shows it was refused before any parsing.
    endless = b'{"batch_id": "b", "rows": [' + b"{}," * 100_000
    response = small_client.post(
        f"/v1/models/{MODEL}/batches", content=gzip.compress(endless), headers=headers
    )
    assert response.status_code == 413, response.text
    assert "CALMON_MAX_ROWS_PER_REQUEST" in response.json()["error"]["message"]


def test_many_empty_gzip_members_are_refused(
    small_client: TestClient, headers: dict[str, str]
) -> None:
    members = gzip.compress(b"", mtime=0) * 20_000
    response = small_client.post(f"/v1/models/{MODEL}/batches", content=members, headers=headers)
    assert response.status_code == 413, response.text
    assert "members" in response.json()["error"]["message"]


def test_a_compression_bomb_is_refused_by_its_ratio(
    small_client: TestClient, headers: dict[str, str]
) -> None:
    padded = msgspec.json.encode({"batch_id": "b", "rows": [ROW]}) + b" " * 10_000_000
    response = small_client.post(
        f"/v1/models/{MODEL}/batches", content=gzip.compress(padded), headers=headers
    )
    assert response.status_code == 413, response.text
    assert "CALMON_MAX_GZIP_RATIO" in response.json()["error"]["message"]


def test_a_batch_at_the_row_limit_is_stored(
    small_client: TestClient, headers: dict[str, str]
) -> None:
    rows = [{**ROW, "id": f"tx-{i}", "segment": "FR"} for i in range(1_000)]
    body = gzip.compress(msgspec.json.encode({"batch_id": "b", "rows": rows}))
    response = small_client.post(f"/v1/models/{MODEL}/batches", content=body, headers=headers)
    assert response.status_code == 201, response.text


def test_a_label_update_has_a_tighter_separator_budget_than_a_batch(
    small_client: TestClient, headers: dict[str, str]
) -> None:
    # 5 separators an entry may use (3, and 2 commas inside the id): 4 commas inside is past it.
    labels_url = f"/v1/models/{MODEL}/labels"
    within = [{"id": f"tx,{i},", "label": 1} for i in range(1_000)]
    answer = small_client.post(
        labels_url, content=gzip.compress(msgspec.json.encode(within)), headers=headers
    )
    assert answer.status_code == 200, answer.text  # unknown ids are listed, not refused
    past = [{"id": f"tx,{i},,,", "label": 1} for i in range(1_000)]
    refused = small_client.post(
        labels_url, content=gzip.compress(msgspec.json.encode(past)), headers=headers
    )
    assert refused.status_code == 413, refused.text
    assert "separators" in refused.json()["error"]["message"]
