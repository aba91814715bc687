"""A label's time and source through every HTTP ingest path, on both backends (issue 23).

Each test reads the database back: the stored ``labelled_at``/``label_source`` of each row,
the windows' dirty versions and the model's clock (``max(windows.newest_event)``).
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import Prediction, Window
from app.monitoring.vocabulary import LABEL_SOURCE_CODES
from tests.support.api import AuthHeaders
from tests.support.worker_data import find_model_id

MODEL = "fraud-v1"
DAY = datetime(2026, 11, 2, tzinfo=UTC)
PARIS_DAY = datetime(2026, 11, 1, 23, tzinfo=UTC)  # 2026-11-02 in Paris starts at 23:00Z
CODES = LABEL_SOURCE_CODES


def z(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def rows(n: int, *, label: int | None = 1, **fields: Any) -> list[dict[str, Any]]:
    """``n`` rows at 10:00 UTC + i minutes on DAY, each labelled ``label``, plus ``fields``."""
    return [
        {
            "id": f"tx-{i}",
            "timestamp": z(DAY + timedelta(hours=10, minutes=i)),
            "score": 0.1 * (i % 10),
            "label": label,
            **fields,
        }
        for i in range(n)
    ]


@pytest.fixture
def ingest(auth_headers: AuthHeaders) -> dict[str, str]:
    return auth_headers("ingest", "read")


@pytest.fixture
def model(client: TestClient, auth_headers: AuthHeaders) -> str:
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "day", "timezone": "Europe/Paris"}
    response = client.post("/v1/models", json=spec, headers=auth_headers("admin"))
    assert response.status_code == 201, response.text
    return MODEL


def batch(client: TestClient, headers: dict[str, str], body: dict[str, Any]) -> Any:
    return client.post(f"/v1/models/{MODEL}/batches", json=body, headers=headers)


def labels(client: TestClient, headers: dict[str, str], entries: list[dict[str, Any]]) -> Any:
    return client.post(f"/v1/models/{MODEL}/labels", json={"labels": entries}, headers=headers)


def stored(
    factory: sessionmaker[Session],
) -> dict[str, tuple[int | None, datetime | None, int | None]]:
    """(label, labelled_at, label_source) by id."""
    with factory() as session:
        result = session.execute(
            select(
                Prediction.prediction_id,
                Prediction.label,
                Prediction.labelled_at,
                Prediction.label_source,
            )
        )
        return {row[0]: (row[1], row[2], row[3]) for row in result}


def dirty(factory: sessionmaker[Session]) -> dict[datetime, int]:
    with factory() as session:
        return dict(session.execute(select(Window.window_start, Window.dirty_version)).all())


def clock(factory: sessionmaker[Session]) -> datetime | None:
    with factory() as session:
        return WindowQueueRepository(session).model_clock(find_model_id(factory, MODEL))


@pytest.mark.usefixtures("model")
def test_batch_rows_store_their_label_time_and_source_or_the_defaults(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """Sent: stored as sent. Not sent: the arrival and ``confirmed``. No label: neither."""
    sent = DAY + timedelta(days=3, hours=1)
    body = rows(3)
    body[0] |= {"labelled_at": "2026-11-05T02:00:00+01:00", "source": "chargeback"}
    body[1] |= {"source": "feedback"}
    body[2] |= {"label": None}
    before = datetime.now(UTC)
    response = batch(client, ingest, {"batch_id": "b-1", "rows": body})
    after = datetime.now(UTC)
    assert response.status_code == 201, response.text
    got = stored(session_factory)
    assert got["tx-0"] == (1, sent, CODES["chargeback"])
    label, received, source = got["tx-1"]
    assert (label, source) == (1, CODES["feedback"])
    assert received is not None
    assert before <= received <= after
    assert got["tx-2"] == (None, None, None)
    # The clock: the newest event of the batch, here the arrival of tx-1's label.
    assert clock(session_factory) == received


@pytest.mark.usefixtures("model")
def test_columnar_and_csv_batches_carry_the_two_columns(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    columnar = rows(2)
    columns = {name: [row[name] for row in columnar] for name in columnar[0]}
    columns |= {"labelled_at": ["2026-11-03T00:00:00Z", None], "source": [None, "feedback"]}
    response = batch(client, ingest, {"batch_id": "col", "columns": columns})
    assert response.status_code == 201, response.text
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["id", "timestamp", "score", "label", "labelled_at", "source"])
    writer.writerow(["c-0", z(DAY + timedelta(hours=9)), 0.3, 0, "2026-11-04T00:00:00Z", ""])
    writer.writerow(["c-1", z(DAY + timedelta(hours=9)), 0.4, "", "", ""])
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=text.getvalue().encode(),
        headers={**ingest, "Content-Type": "text/csv", "X-Batch-Id": "csv"},
    )
    assert response.status_code == 201, response.text
    got = stored(session_factory)
    assert got["tx-0"] == (1, datetime(2026, 11, 3, tzinfo=UTC), CODES["confirmed"])
    assert got["tx-1"][0::2] == (1, CODES["feedback"])
    assert got["c-0"] == (0, datetime(2026, 11, 4, tzinfo=UTC), CODES["confirmed"])
    assert got["c-1"] == (None, None, None)


@pytest.mark.usefixtures("model")
def test_the_labels_endpoint_stores_time_and_source_in_json_and_csv(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    assert batch(client, ingest, {"batch_id": "b", "rows": rows(4, label=None)}).status_code == 201
    entries = [
        {"id": "tx-0", "label": 1, "labelled_at": "2026-11-20T08:00:00Z", "source": "chargeback"},
        {"id": "tx-1", "label": 0},
    ]
    before = datetime.now(UTC)
    response = labels(client, ingest, entries)
    assert response.status_code == 200, response.text
    assert response.json()["rows_updated"] == 2
    csv_body = "id,source,label,labelled_at\ntx-2,feedback,1,2026-11-21T00:00:00+01:00\ntx-3,,0,\n"
    response = client.post(
        f"/v1/models/{MODEL}/labels",
        content=csv_body.encode(),
        headers={**ingest, "Content-Type": "text/csv"},
    )
    assert response.status_code == 200, response.text
    got = stored(session_factory)
    assert got["tx-0"] == (1, datetime(2026, 11, 20, 8, tzinfo=UTC), CODES["chargeback"])
    assert got["tx-2"] == (1, datetime(2026, 11, 20, 23, tzinfo=UTC), CODES["feedback"])
    for defaulted in ("tx-1", "tx-3"):
        label, received, source = got[defaulted]
        assert (label, source) == (0, CODES["confirmed"])
        assert received is not None
        assert received >= before


@pytest.mark.usefixtures("model")
def test_first_arrival_wins_on_the_labels_endpoint(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    assert batch(client, ingest, {"batch_id": "b", "rows": rows(2, label=None)}).status_code == 201
    first = {"id": "tx-0", "label": 1, "labelled_at": "2026-11-10T00:00:00Z", "source": "feedback"}
    assert labels(client, ingest, [first]).status_code == 200
    versions, moved_to = dirty(session_factory), clock(session_factory)
    again = first | {"labelled_at": "2026-11-12T00:00:00Z", "source": "chargeback"}
    answer = labels(client, ingest, [again]).json()
    assert (answer["rows_updated"], answer["rows_unchanged"], answer["windows_touched"]) == (
        0,
        1,
        [],
    )
    assert stored(session_factory)["tx-0"] == (1, datetime(2026, 11, 10, tzinfo=UTC), 1)
    assert dirty(session_factory) == versions  # nothing to recompute
    assert clock(session_factory) == moved_to  # the ignored time did not move the clock
    changed = again | {"label": 0}
    answer = labels(client, ingest, [changed]).json()
    assert answer["rows_updated"] == 1
    assert stored(session_factory)["tx-0"] == (0, datetime(2026, 11, 12, tzinfo=UTC), 2)
    assert clock(session_factory) == datetime(2026, 11, 12, tzinfo=UTC)


@pytest.mark.usefixtures("model")
def test_first_arrival_wins_on_resent_rows(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    body = rows(3, labelled_at="2026-11-10T00:00:00Z", source="feedback")
    assert batch(client, ingest, {"batch_id": "b-1", "rows": body}).status_code == 201
    versions, moved_to = dirty(session_factory), clock(session_factory)
    later = [row | {"labelled_at": "2026-11-15T00:00:00Z", "source": "chargeback"} for row in body]
    later[1] = body[1] | {"label": None}  # a row without a label never erases one, nor its time
    del later[1]["labelled_at"], later[1]["source"]
    answer = batch(client, ingest, {"batch_id": "b-2", "rows": later}).json()
    assert (answer["rows_updated"], answer["rows_unchanged"], answer["windows_touched"]) == (
        0,
        3,
        [],
    )
    assert dirty(session_factory) == versions
    assert clock(session_factory) == moved_to
    first = (1, datetime(2026, 11, 10, tzinfo=UTC), CODES["feedback"])
    assert set(stored(session_factory).values()) == {first}
    # A changed value takes the new time and source; a changed score alone keeps them.
    later = [later[0] | {"label": 0}, later[2] | {"score": 0.99}]
    answer = batch(client, ingest, {"batch_id": "b-3", "rows": later}).json()
    assert (answer["rows_updated"], answer["windows_touched"]) == (2, [z(PARIS_DAY)])
    got = stored(session_factory)
    assert got["tx-0"] == (0, datetime(2026, 11, 15, tzinfo=UTC), CODES["chargeback"])
    assert got["tx-2"] == first
    assert clock(session_factory) == datetime(2026, 11, 15, tzinfo=UTC)


@pytest.mark.usefixtures("model")
def test_a_resent_batch_is_a_replay_whatever_its_defaults_became(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """The arrival (the default time) is not part of what was sent: same batch, same hash."""
    timed = rows(3, labelled_at="2026-11-03T00:00:00Z", source="feedback")
    for batch_id, body in (("plain", rows(3)), ("timed", timed)):
        first = batch(client, ingest, {"batch_id": batch_id, "rows": body})
        assert first.status_code == 201, first.text
        before = stored(session_factory)
        replay = batch(client, ingest, {"batch_id": batch_id, "rows": body})
        assert replay.status_code == 200, replay.text
        assert replay.json() == first.json()
        assert stored(session_factory) == before
    # "confirmed" is what an absent source means: sending it is the same content.
    confirmed = [row | {"source": "confirmed"} for row in rows(3)]
    assert batch(client, ingest, {"batch_id": "plain", "rows": confirmed}).status_code == 200
    other = [row | {"source": "chargeback"} for row in rows(3)]
    assert batch(client, ingest, {"batch_id": "plain", "rows": other}).status_code == 409


BAD_ROWS: list[tuple[dict[str, Any], str, str]] = [
    ({"labelled_at": 1793527200}, "labelled_at", "must be an ISO-8601 string"),
    ({"labelled_at": "2026-11-03T10:00:00"}, "labelled_at", "no UTC offset"),
    ({"labelled_at": "last tuesday"}, "labelled_at", "not an ISO-8601 timestamp"),
    ({"labelled_at": "2999-01-01T00:00:00Z"}, "labelled_at", "now + CALMON_MAX_FUTURE"),
    # ISO 8601, but before year 1 in UTC: the label update's check against the stored row read
    # it back from the database and was a 500.
    ({"labelled_at": "0001-01-01T00:00:00+14:00"}, "labelled_at", "outside the years 1 to 9999"),
    ({"labelled_at": "2026-11-02T09:00:00Z"}, "labelled_at", "before the prediction's"),
    ({"labelled_at": "2026-11-03T00:00:00Z", "label": None}, "labelled_at", "label is null"),
    ({"source": "bank"}, "source", "feedback, chargeback, confirmed"),
    ({"source": ["chargeback"]}, "source", "feedback, chargeback, confirmed"),
    ({"source": "feedback", "label": None}, "source", "label is null"),
]


Case = tuple[dict[str, Any], str, str]


@pytest.mark.parametrize("case", BAD_ROWS)
@pytest.mark.usefixtures("model")
def test_a_bad_label_time_or_source_refuses_the_batch_naming_row_and_field(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session], case: Case
) -> None:
    """``case``: the change to row 2, the field named and part of the message."""
    change, field, message = case
    body = rows(4)
    body[2] |= change
    response = batch(client, ingest, {"batch_id": "bad", "rows": body})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert (error["code"], error["error_count"]) == ("invalid_batch", 1)
    (detail,) = error["details"]
    assert (detail["row"], detail["field"]) == (2, field)
    assert message in detail["message"]
    assert stored(session_factory) == {}
    assert dirty(session_factory) == {}


@pytest.mark.parametrize(
    "case",
    [case for case in BAD_ROWS if "label" not in case[0]]
    + [({"label": 1, "lablled_at": "2026-11-03T00:00:00Z"}, "row", "optionally")],
)
@pytest.mark.usefixtures("model")
def test_a_bad_label_time_or_source_refuses_the_label_update_naming_entry_and_field(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session], case: Case
) -> None:
    """As for batches, and a time before the stored row's timestamp (which only the database
    knows); the valid entries are not applied either."""
    change, field, message = case
    assert batch(client, ingest, {"batch_id": "b", "rows": rows(4, label=None)}).status_code == 201
    before, versions = stored(session_factory), dirty(session_factory)
    entries = [{"id": f"tx-{i}", "label": 1} for i in range(4)]
    entries[2] |= change
    response = labels(client, ingest, entries)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert (error["code"], error["error_count"]) == ("invalid_labels", 1)
    (detail,) = error["details"]
    assert (detail["row"], detail["field"]) == (2, field)
    assert message in detail["message"]
    assert stored(session_factory) == before  # the valid entries were not applied either
    assert dirty(session_factory) == versions


@pytest.mark.usefixtures("model")
def test_label_times_before_their_rows_are_counted_and_the_first_named(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    assert batch(client, ingest, {"batch_id": "b", "rows": rows(30, label=None)}).status_code == 201
    before = stored(session_factory)
    early = [{"id": f"tx-{i}", "label": 1, "labelled_at": z(DAY)} for i in range(30)]
    early[0]["labelled_at"] = "2026-11-20T00:00:00Z"  # fine
    response = labels(
        client, ingest, [*early, {"id": "unknown", "label": 1, "labelled_at": z(DAY)}]
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["error_count"] == 29
    assert [(d["row"], d["field"]) for d in error["details"]] == [
        (row, "labelled_at") for row in range(1, 21)
    ]
    assert (
        "'2026-11-02T00:00:00Z' is before the prediction's timestamp (2026-11-02T10:01:00Z)"
        in (error["details"][0]["message"])
    )
    assert stored(session_factory) == before


@pytest.mark.usefixtures("model")
def test_a_label_is_never_timed_before_its_prediction(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """A prediction ahead of the server's clock (within CALMON_MAX_FUTURE), labelled with no
    time: its label is timed at its timestamp, not before it."""
    ahead = datetime.now(UTC) + timedelta(hours=2)
    row = {"id": "ahead", "timestamp": z(ahead), "score": 0.5, "label": 1}
    assert batch(client, ingest, {"batch_id": "b", "rows": [row]}).status_code == 201
    other = row | {"id": "later", "label": None}
    assert batch(client, ingest, {"batch_id": "c", "rows": [other]}).status_code == 201
    assert labels(client, ingest, [{"id": "later", "label": 1}]).status_code == 200
    got = stored(session_factory)
    assert got["ahead"][1] == ahead
    assert got["later"][1] == got["ahead"][1]


@pytest.mark.usefixtures("model")
def test_the_model_clock_moves_with_timestamps_and_label_times_only_forward(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    assert clock(session_factory) is None
    body = rows(3, label=None)
    assert batch(client, ingest, {"batch_id": "b-1", "rows": body}).status_code == 201
    assert clock(session_factory) == DAY + timedelta(hours=10, minutes=2)
    assert batch(client, ingest, {"batch_id": "b-2", "rows": body}).status_code == 201  # no-op
    assert clock(session_factory) == DAY + timedelta(hours=10, minutes=2)
    later = [{"id": "tx-0", "label": 1, "labelled_at": "2026-11-09T00:00:00Z"}]
    assert labels(client, ingest, later).status_code == 200
    assert clock(session_factory) == datetime(2026, 11, 9, tzinfo=UTC)
    earlier = [{"id": "tx-1", "label": 1, "labelled_at": "2026-11-05T00:00:00Z"}]
    assert labels(client, ingest, earlier).status_code == 200
    assert clock(session_factory) == datetime(2026, 11, 9, tzinfo=UTC)  # never back
    with session_factory() as session:
        newest = dict(session.execute(select(Window.window_start, Window.newest_event)).all())
    assert newest == {PARIS_DAY: datetime(2026, 11, 9, tzinfo=UTC)}
    # A row moved to another window brings its timestamp there; the window it left keeps its own.
    moved = body[2] | {"timestamp": "2026-11-04T12:00:00Z", "id": "tx-2"}
    assert batch(client, ingest, {"batch_id": "b-3", "rows": [moved]}).status_code == 201
    with session_factory() as session:
        newest = dict(session.execute(select(Window.window_start, Window.newest_event)).all())
    assert newest == {
        PARIS_DAY: datetime(2026, 11, 9, tzinfo=UTC),
        datetime(2026, 11, 3, 23, tzinfo=UTC): datetime(2026, 11, 4, 12, tzinfo=UTC),
    }
