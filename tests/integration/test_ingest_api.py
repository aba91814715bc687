"""Batch ingestion through HTTP against a real database (both backends).

Every test reads the database back rather than trusting the response: rows stored, batch
records, and the windows' dirty_version (the worker's queue).
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.db.tables import Batch, Prediction, Window
from app.settings import Settings
from tests.support.api import AuthHeaders
from tests.support.databases import settings_for

MODEL = "fraud-v1"
DAY = datetime(2026, 11, 2, tzinfo=UTC)  # a Monday; 10:00 UTC is 11:00 in Paris


def make_rows(
    n: int, *, start: datetime = DAY + timedelta(hours=10), prefix: str = "tx"
) -> list[dict[str, Any]]:
    """``n`` distinct rows one second apart, every 10th positive, every 7th unlabelled."""
    return [
        {
            "id": f"{prefix}-{i}",
            "timestamp": (start + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
            "score": round((i * 37 % 100) / 100, 2),
            "label": None if i % 7 == 0 else int(i % 10 == 0),
            "segment": "FR" if i % 2 else "DE",
        }
        for i in range(n)
    ]


def columnar(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {field: [row[field] for row in rows] for field in rows[0]}


@pytest.fixture
def ingest(auth_headers: AuthHeaders) -> dict[str, str]:
    return auth_headers("ingest", "read")


@pytest.fixture
def model(client: TestClient, auth_headers: AuthHeaders) -> str:
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "day", "timezone": "Europe/Paris"}
    response = client.post("/v1/models", json=spec, headers=auth_headers("admin"))
    assert response.status_code == 201, response.text
    return MODEL


def post(client: TestClient, headers: dict[str, str], body: dict[str, Any]) -> Any:
    return client.post(f"/v1/models/{MODEL}/batches", json=body, headers=headers)


def stored_ids(factory: sessionmaker[Session]) -> list[str]:
    with factory() as session:
        return sorted(session.scalars(select(Prediction.prediction_id)))


def dirty_versions(factory: sessionmaker[Session]) -> dict[str, int]:
    with factory() as session:
        return {
            start.isoformat().replace("+00:00", "Z"): version
            for start, version in session.execute(select(Window.window_start, Window.dirty_version))
        }


PARIS_DAY = "2026-11-01T23:00:00Z"  # local midnight of 2026-11-02 in Paris (CET, UTC+1)


def test_row_json_batch_is_stored_and_dirties_its_window(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    rows = make_rows(50)
    response = post(client, ingest, {"batch_id": "b-1", "rows": rows})
    assert response.status_code == 201, response.text
    assert response.json() == {
        "batch_id": "b-1",
        "rows_inserted": 50,
        "rows_updated": 0,
        "rows_unchanged": 0,
        "windows_touched": [PARIS_DAY],
    }
    assert stored_ids(session_factory) == sorted(row["id"] for row in rows)
    assert dirty_versions(session_factory) == {PARIS_DAY: 1}
    with session_factory() as session:
        stored = session.scalars(select(Prediction).where(Prediction.prediction_id == "tx-7")).one()
        assert stored.label is None
        assert stored.segment == "FR"
        assert stored.ts == DAY + timedelta(hours=10, seconds=7)


def test_columnar_csv_and_gzip_forms_store_the_same_rows(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    rows = [make_rows(30, prefix=p) for p in ("col", "csv", "gz")]
    response = post(client, ingest, {"batch_id": "col", "columns": columnar(rows[0])})
    assert response.status_code == 201, response.text

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[1][0]))
    writer.writeheader()
    writer.writerows(
        {**row, "label": "" if row["label"] is None else row["label"]} for row in rows[1]
    )
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=text.getvalue().encode(),
        headers={**ingest, "Content-Type": "text/csv", "X-Batch-Id": "csv"},
    )
    assert response.status_code == 201, response.text

    body = gzip.compress(msgspec.json.encode({"batch_id": "gz", "rows": rows[2]}))
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=body,
        headers={**ingest, "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert response.status_code == 201, response.text
    assert stored_ids(session_factory) == sorted(r["id"] for part in rows for r in part)
    with session_factory() as session:
        labels = dict(session.execute(select(Prediction.prediction_id, Prediction.label)).all())
    for part in rows:
        assert all(labels[row["id"]] == row["label"] for row in part)
    assert dirty_versions(session_factory) == {PARIS_DAY: 3}


def test_the_same_content_in_another_format_is_an_idempotent_replay(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    rows = make_rows(20)
    first = post(client, ingest, {"batch_id": "b-1", "rows": rows})
    assert first.status_code == 201
    replay = post(client, ingest, {"batch_id": "b-1", "columns": columnar(rows)})
    assert replay.status_code == 200, replay.text
    assert replay.json() == first.json()
    assert dirty_versions(session_factory) == {PARIS_DAY: 1}  # nothing written the second time
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(Batch)) == 1


def test_a_reused_batch_id_with_other_content_is_409(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    rows = make_rows(20)
    assert post(client, ingest, {"batch_id": "b-1", "rows": rows}).status_code == 201
    rows[3]["score"] = 0.99
    response = post(client, ingest, {"batch_id": "b-1", "rows": rows})
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "batch_conflict"
    with session_factory() as session:
        assert (
            session.scalar(select(Prediction.score).where(Prediction.prediction_id == "tx-3"))
            != 0.99
        )


def test_a_late_label_moves_the_row_and_dirties_both_windows(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    assert post(client, ingest, {"batch_id": "b-1", "rows": make_rows(10)}).status_code == 201
    moved = make_rows(10)[4]
    moved.update(label=1, score=0.97, timestamp="2026-11-03T12:00:00+01:00")
    response = post(client, ingest, {"batch_id": "b-2", "rows": [moved]})
    assert response.status_code == 201, response.text
    next_day = "2026-11-02T23:00:00Z"
    assert response.json() == {
        "batch_id": "b-2",
        "rows_inserted": 0,
        "rows_updated": 1,
        "rows_unchanged": 0,
        "windows_touched": [PARIS_DAY, next_day],
    }
    assert dirty_versions(session_factory) == {PARIS_DAY: 2, next_day: 1}
    with session_factory() as session:
        row = session.scalars(select(Prediction).where(Prediction.prediction_id == "tx-4")).one()
    assert (row.label, row.score, row.window_start) == (
        1,
        0.97,
        datetime(2026, 11, 2, 23, tzinfo=UTC),
    )


def test_an_identical_resend_is_no_update_and_dirties_nothing(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """A feed replayed under new batch ids changes nothing: no update, no recomputation; a
    changed label or score in it still is an update of that row's window only."""
    rows = make_rows(10)
    assert post(client, ingest, {"batch_id": "b-1", "rows": rows}).status_code == 201
    again = post(client, ingest, {"batch_id": "b-2", "rows": rows})
    assert again.status_code == 201, again.text
    assert again.json() == {
        "batch_id": "b-2",
        "rows_inserted": 0,
        "rows_updated": 0,
        "rows_unchanged": 10,
        "windows_touched": [],
    }
    assert dirty_versions(session_factory) == {PARIS_DAY: 1}
    unlabelled = rows[2] | {"label": None}  # a null label keeps the stored one: identical too
    changed = [rows[3] | {"label": 1}, rows[1] | {"score": 0.123}, unlabelled]
    fresh = make_rows(12)[11]
    answer = post(client, ingest, {"batch_id": "b-3", "rows": [*changed, fresh]}).json()
    assert (answer["rows_inserted"], answer["rows_updated"], answer["rows_unchanged"]) == (1, 2, 1)
    assert answer["windows_touched"] == [PARIS_DAY]
    assert dirty_versions(session_factory) == {PARIS_DAY: 2}


def test_a_resent_row_without_label_keeps_the_stored_label(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    row = make_rows(2)[1] | {"label": 1}
    assert post(client, ingest, {"batch_id": "b-1", "rows": [row]}).status_code == 201
    assert (
        post(client, ingest, {"batch_id": "b-2", "rows": [row | {"label": None}]}).status_code
        == 201
    )
    with session_factory() as session:
        assert session.scalar(select(Prediction.label)) == 1


def test_labels_endpoint_updates_known_ids_and_lists_unknown_ones(
    client: TestClient, model: str, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    assert post(client, ingest, {"batch_id": "b-1", "rows": make_rows(10)}).status_code == 201
    labels = [{"id": "tx-0", "label": 1}, {"id": "tx-1", "label": 1}, {"id": "nope", "label": 0}]
    url = f"/v1/models/{MODEL}/labels"
    response = client.post(url, json={"labels": labels}, headers=ingest)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "rows_updated": 2,
        "rows_unchanged": 0,
        "unknown_ids": ["nope"],
        "windows_touched": [PARIS_DAY],
    }
    assert dirty_versions(session_factory) == {PARIS_DAY: 2}
    replay = client.post(url, json=labels, headers=ingest).json()  # the bare array works too
    assert (replay["rows_updated"], replay["rows_unchanged"], replay["windows_touched"]) == (
        0,
        2,
        [],
    )
    assert dirty_versions(session_factory) == {PARIS_DAY: 2}  # nothing changed, nothing to redo
    with session_factory() as session:
        assert (
            session.scalar(select(Prediction.label).where(Prediction.prediction_id == "tx-0")) == 1
        )


def _break(rows: list[dict[str, Any]], row: int, **changes: Any) -> list[dict[str, Any]]:
    rows[row].update(changes)
    return rows


def _drop(rows: list[dict[str, Any]], row: int, field: str) -> list[dict[str, Any]]:
    del rows[row][field]
    return rows


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (_break(make_rows(5), 2, score="high"), (2, "score", "must be a number")),
        (_break(make_rows(5), 1, score=None), (1, "score", "must be a number")),
        (_break(make_rows(5), 3, label=2), (3, "label", "must be 0, 1 or null")),
        (_break(make_rows(5), 3, label="1"), (3, "label", "must be 0, 1 or null")),
        (_break(make_rows(5), 4, id="tx-1"), (4, "id", "duplicate of row 1")),
        (_break(make_rows(5), 0, id=""), (0, "id", "must not be empty")),
        (_break(make_rows(5), 2, timestamp="yesterday"), (2, "timestamp", "not an ISO-8601")),
        (
            _break(make_rows(5), 2, timestamp="2026-11-02T10:00:00"),
            (2, "timestamp", "no UTC offset"),
        ),
        (
            _break(make_rows(5), 1, timestamp="1970-01-01T00:00:00Z"),
            (1, "timestamp", "before the earliest accepted"),
        ),
        (
            _break(make_rows(5), 1, timestamp="2999-01-01T00:00:00Z"),
            (1, "timestamp", "after the latest accepted"),
        ),
        # Valid ISO 8601 whose UTC time is before year 1 or after 9999, and Unix seconds
        # before year 1: each was a 500 (a message or a hint made a UTC datetime of it).
        (
            _break(make_rows(5), 2, timestamp="0001-01-01T00:00:00+14:00"),
            (2, "timestamp", "outside the years 1 to 9999 in UTC"),
        ),
        (
            _break(make_rows(5), 3, timestamp="9999-12-31T23:59:59-01:00"),
            (3, "timestamp", "outside the years 1 to 9999 in UTC"),
        ),
        (
            _break(make_rows(5), 1, timestamp=-99_999_999_999_999),
            (1, "timestamp", "out of range: it looks like microseconds"),
        ),
        (
            _break(make_rows(5), 4, timestamp=-70_000_000_000),
            (4, "timestamp", "Unix seconds -70000000000 out of range"),
        ),
        (_drop(make_rows(5), 3, "timestamp"), (3, "timestamp", "is required")),
        (_break(make_rows(5), 2, lable=1), (2, "lable", "unknown field")),
    ],
)
@pytest.mark.usefixtures("model")
def test_an_invalid_row_refuses_the_whole_batch(
    client: TestClient,
    ingest: dict[str, str],
    session_factory: sessionmaker[Session],
    rows: list[dict[str, Any]],
    expected: tuple[int, str, str],
) -> None:
    """``expected``: the refused row, its field and part of the message."""
    row, field, message = expected
    response = post(client, ingest, {"batch_id": "bad", "rows": rows})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_batch"
    assert error["error_count"] == 1
    (detail,) = error["details"]
    assert (detail["row"], detail["field"]) == (row, field)
    assert message in detail["message"]
    assert stored_ids(session_factory) == []
    assert dirty_versions(session_factory) == {}


def test_non_finite_scores_are_refused_in_json_and_csv(
    client: TestClient, model: str, ingest: dict[str, str]
) -> None:
    row = b'{"id": "a", "timestamp": "2026-11-02T10:00:00Z", "score": 1e999}'
    raw = b'{"batch_id": "b", "rows": [' + row + b"]}"
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=raw,
        headers={**ingest, "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert "infinity" in response.json()["error"]["details"][0]["message"]
    csv_body = (
        b"id,timestamp,score\n"
        b"a,2026-11-02T10:00:00Z,0.5\n"
        b"b,2026-11-02T10:00:00Z,nan\n"
        b"c,2026-11-02T10:00:00Z,inf\n"
    )
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=csv_body,
        params={"batch_id": "csv"},
        headers={**ingest, "Content-Type": "text/csv"},
    )
    assert response.status_code == 422
    details = response.json()["error"]["details"]
    assert [(d["row"], d["field"]) for d in details] == [(1, "score"), (2, "score")]


def test_errors_are_listed_by_row_capped_and_counted(
    client: TestClient, model: str, ingest: dict[str, str]
) -> None:
    rows = make_rows(100)
    for row in rows[10:60]:
        row["label"] = 5
    rows[12]["score"] = "x"
    response = post(client, ingest, {"batch_id": "bad", "rows": rows})
    error = response.json()["error"]
    assert error["error_count"] == 51
    assert len(error["details"]) == 20
    assert [(d["row"], d["field"]) for d in error["details"][:4]] == [
        (10, "label"),
        (11, "label"),
        (12, "label"),
        (12, "score"),
    ]


@pytest.fixture
def small_limits(settings: Settings) -> Iterator[TestClient]:
    limited = settings_for(settings.database_url, max_rows_per_request=100, max_body_bytes=20_000)
    with TestClient(create_app(limited)) as test_client:
        yield test_client


def test_limits_and_content_types(
    small_limits: TestClient,
    model: str,
    ingest: dict[str, str],
    session_factory: sessionmaker[Session],
) -> None:
    client = small_limits
    too_many = post(
        client,
        ingest,
        {
            "batch_id": "many",
            "columns": {
                "id": [f"i{i}" for i in range(101)],
                "timestamp": ["2026-11-02T10:00:00Z"] * 101,
                "score": [0.5] * 101,
            },
        },
    )
    assert too_many.status_code == 413, too_many.text
    too_big = post(client, ingest, {"batch_id": "big", "rows": make_rows(100, prefix="x" * 150)})
    assert too_big.status_code == 413, too_big.text
    bomb = gzip.compress(b"[" + b" " * 10_000_000 + b"]")
    assert len(bomb) < 20_000
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=bomb,
        headers={**ingest, "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert response.status_code == 413, response.text
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=b"<rows/>",
        headers={**ingest, "Content-Type": "application/xml"},
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert stored_ids(session_factory) == []


def test_ingest_needs_the_ingest_scope_and_a_known_model(
    client: TestClient, model: str, auth_headers: AuthHeaders
) -> None:
    body = {"batch_id": "b", "rows": make_rows(1)}
    assert client.post(f"/v1/models/{MODEL}/batches", json=body).status_code == 401
    assert post(client, auth_headers("read"), body).status_code == 403
    unknown = client.post("/v1/models/nope/batches", json=body, headers=auth_headers("ingest"))
    assert unknown.status_code == 404
