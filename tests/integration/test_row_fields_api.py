"""A row's amount and entity (issue 24) through every HTTP ingest path, on both backends.

Each test reads the database back: the stored ``amount``/``entity`` of each row, and that a
refused batch left no row and no batch record. The paths differ by backend and by batch: on
PostgreSQL a batch of new ids is two binary COPYs, keys and rows (the columns only when sent),
and a batch with stored ids the staged upsert; on SQLite both are staged.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.tables import Batch, Prediction, Window
from app.input_rules import MAX_AMOUNT, MAX_ENTITY_LENGTH
from tests.support.api import AuthHeaders

MODEL = "fraud-v1"
DAY = datetime(2026, 11, 2, tzinfo=UTC)
# Amounts a double holds exactly as sent, and entities of every kind a card or account has.
# The largest accepted amount (MAX_AMOUNT) and a value with all 17 significant digits near it.
AMOUNTS = [0.0, 12.34, 1_000_000.01, 5e-324, MAX_AMOUNT, 3, 987654321098765.4, None]

ENTITIES = ["card-1", "é-carte 42", "x" * MAX_ENTITY_LENGTH, "acct:7", "card-1", None, "c 9", "z"]


def z(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def rows(n: int, prefix: str = "tx", **fields: list[Any]) -> list[dict[str, Any]]:
    """``n`` rows on DAY, a minute apart, unlabelled, with ``fields`` (a value per row; None
    leaves the field out of that row)."""
    made = []
    for i in range(n):
        row: dict[str, Any] = {
            "id": f"{prefix}-{i}",
            "timestamp": z(DAY + timedelta(hours=10, minutes=i)),
            "score": 0.1 * (i % 10),
        }
        row |= {name: values[i] for name, values in fields.items() if values[i] is not None}
        made.append(row)
    return made


def columnar(made: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    return {name: [row.get(name) for row in made] for name in names}


def csv_body(made: list[dict[str, Any]], names: tuple[str, ...]) -> bytes:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(names)
    # repr: the shortest text that reads back as the same double.
    writer.writerows(
        ["" if row.get(n) is None else repr(row[n]) if n == "amount" else row[n] for n in names]
        for row in made
    )
    return text.getvalue().encode()


FIELDS = ("id", "timestamp", "score", "amount", "entity")


@pytest.fixture
def ingest(auth_headers: AuthHeaders) -> dict[str, str]:
    return auth_headers("ingest", "read")


@pytest.fixture
def model(client: TestClient, auth_headers: AuthHeaders) -> str:
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "day", "timezone": "Europe/Paris"}
    response = client.post("/v1/models", json=spec, headers=auth_headers("admin"))
    assert response.status_code == 201, response.text
    return MODEL


def post_json(client: TestClient, headers: dict[str, str], body: dict[str, Any]) -> Any:
    # The standard library writes what the tests need sent as is (an integer past 64 bits).
    return client.post(
        f"/v1/models/{MODEL}/batches",
        content=json.dumps(body).encode(),
        headers={**headers, "Content-Type": "application/json"},
    )


def post_csv(client: TestClient, headers: dict[str, str], body: bytes, batch_id: str) -> Any:
    return client.post(
        f"/v1/models/{MODEL}/batches",
        content=body,
        headers={**headers, "Content-Type": "text/csv", "X-Batch-Id": batch_id},
    )


def stored(factory: sessionmaker[Session]) -> dict[str, tuple[float | None, str | None]]:
    """(amount, entity) by id."""
    with factory() as session:
        result = session.execute(
            select(Prediction.prediction_id, Prediction.amount, Prediction.entity)
        )
        return {row[0]: (row[1], row[2]) for row in result}


def counts(factory: sessionmaker[Session]) -> tuple[int, int]:
    """(predictions, batches) stored."""
    with factory() as session:
        predictions = session.scalar(select(func.count()).select_from(Prediction))
        batches = session.scalar(select(func.count()).select_from(Batch))
        return int(predictions or 0), int(batches or 0)


def dirty(factory: sessionmaker[Session]) -> dict[datetime, int]:
    with factory() as session:
        return dict(session.execute(select(Window.window_start, Window.dirty_version)).all())


def expected(prefix: str) -> dict[str, tuple[float | None, str | None]]:
    return {
        f"{prefix}-{i}": (None if a is None else float(a), e)
        for i, (a, e) in enumerate(zip(AMOUNTS, ENTITIES, strict=True))
    }


@pytest.mark.usefixtures("model")
def test_every_format_stores_amount_and_entity_exactly(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """Row JSON, columnar JSON and CSV, each with rows that send one field, both or neither:
    the values read back are the ones sent, and NULL where none was."""
    n = len(AMOUNTS)
    by_rows = rows(n, "row", amount=AMOUNTS, entity=ENTITIES)
    response = post_json(client, ingest, {"batch_id": "rows", "rows": by_rows})
    assert response.status_code == 201, response.text
    by_columns = rows(n, "col", amount=AMOUNTS, entity=ENTITIES)
    body = {"batch_id": "columns", "columns": columnar(by_columns, FIELDS)}
    assert post_json(client, ingest, body).status_code == 201
    by_csv = rows(n, "csv", amount=AMOUNTS, entity=ENTITIES)
    response = post_csv(client, ingest, csv_body(by_csv, FIELDS), "csv")
    assert response.status_code == 201, response.text
    got = stored(session_factory)
    for prefix in ("row", "col", "csv"):
        assert {k: v for k, v in got.items() if k.startswith(prefix)} == expected(prefix)


@pytest.mark.usefixtures("model")
def test_a_batch_without_them_stores_nulls(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    assert post_json(client, ingest, {"batch_id": "a", "rows": rows(3, "a")}).status_code == 201
    nulls = columnar(rows(3, "b"), ("id", "timestamp", "score")) | {
        "amount": [None] * 3,
        "entity": [None] * 3,
    }
    assert post_json(client, ingest, {"batch_id": "b", "columns": nulls}).status_code == 201
    only_amount = rows(2, "c", amount=[1.5, 2.5])
    assert post_csv(client, ingest, csv_body(only_amount, FIELDS[:4]), "c").status_code == 201
    got = stored(session_factory)
    assert {k: v for k, v in got.items() if k[0] in "ab"} == dict.fromkeys(
        [f"{p}-{i}" for p in "ab" for i in range(3)], (None, None)
    )
    assert {k: v for k, v in got.items() if k[0] == "c"} == {
        "c-0": (1.5, None),
        "c-1": (2.5, None),
    }


BAD: list[tuple[str, Any]] = [
    ("amount", -0.01),
    ("amount", True),
    ("amount", "12.5"),
    ("amount", 10**400),
    # Finite, but every sum of its window overflowed and the window was parked (MAX_AMOUNT).
    ("amount", 1e308),
    ("amount", 2e15),
    ("entity", ""),
    ("entity", "   "),
    ("entity", "x" * (MAX_ENTITY_LENGTH + 1)),
    ("entity", 1234),
    ("entity", False),
]


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("shape", ["rows", "columns"])
def test_a_bad_value_refuses_the_batch_naming_row_and_field(
    client: TestClient,
    ingest: dict[str, str],
    session_factory: sessionmaker[Session],
    bad: tuple[str, Any],
    shape: str,
) -> None:
    field, value = bad
    made = rows(4, amount=[1.0, 2.0, 3.0, 4.0], entity=["a", "b", "c", "d"])
    made[2][field] = value
    content = made if shape == "rows" else columnar(made, FIELDS)
    response = post_json(client, ingest, {"batch_id": "bad", shape: content})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_batch"
    assert [(d["row"], d["field"]) for d in error["details"]] == [(2, field)]
    assert counts(session_factory) == (0, 0)


@pytest.mark.usefixtures("model")
@pytest.mark.parametrize(
    ("field", "text"),
    [("amount", "-3"), ("amount", "nan"), ("amount", "ten"), ("amount", "1e308"), ("entity", " ")],
)
def test_a_bad_csv_value_refuses_the_batch_naming_row_and_field(
    client: TestClient,
    ingest: dict[str, str],
    session_factory: sessionmaker[Session],
    *,
    field: str,
    text: str,
) -> None:
    lines = ["id,timestamp,score,amount,entity"]
    lines += [f"v-{i},{z(DAY + timedelta(hours=i))},0.5,{i}.5,card-{i}" for i in range(3)]
    cells = lines[2].split(",")
    cells[3 if field == "amount" else 4] = text
    lines[2] = ",".join(cells)
    response = post_csv(client, ingest, ("\n".join(lines) + "\n").encode(), "bad-csv")
    assert response.status_code == 422, response.text
    assert [(d["row"], d["field"]) for d in response.json()["error"]["details"]] == [(1, field)]
    assert counts(session_factory) == (0, 0)


@pytest.mark.usefixtures("model")
def test_a_non_finite_json_amount_is_named_and_nothing_is_written(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    body = (
        b'{"batch_id": "nan", "rows": [{"id": "a", "timestamp": "2026-11-02T10:00:00Z", '
        b'"score": 0.5, "amount": 1}, {"id": "b", "timestamp": "2026-11-02T10:00:00Z", '
        b'"score": 0.5, "amount": Infinity}]}'
    )
    response = client.post(
        f"/v1/models/{MODEL}/batches",
        content=body,
        headers={**ingest, "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert [(d["row"], d["field"]) for d in response.json()["error"]["details"]] == [(1, "amount")]
    assert counts(session_factory) == (0, 0)


@pytest.mark.usefixtures("model")
def test_a_replay_returns_the_stored_answer_and_writes_nothing_twice(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    made = rows(4, amount=[1.0, 2.0, None, 4.0], entity=ENTITIES[:4])
    body = {"batch_id": "once", "rows": made}
    first = post_json(client, ingest, body)
    assert first.status_code == 201, first.text
    before, versions = stored(session_factory), dirty(session_factory)
    again = post_json(client, ingest, body)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert counts(session_factory) == (4, 1)
    assert stored(session_factory) == before
    assert dirty(session_factory) == versions  # nothing queued for the worker again
    # The same rows as CSV are the same content: a replay too.
    assert post_csv(client, ingest, csv_body(made, FIELDS), "once").status_code == 200
    # Another amount under the same batch id is other content: a conflict, nothing written.
    made[0]["amount"] = 1.5
    conflict = post_json(client, ingest, body)
    assert conflict.status_code == 409, conflict.text
    assert stored(session_factory) == before


@pytest.mark.usefixtures("model")
def test_a_late_label_keeps_the_amount_and_entity(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    made = rows(3, amount=[10.0, 20.0, 30.0], entity=["c1", "c2", "c3"])
    assert post_json(client, ingest, {"batch_id": "b", "rows": made}).status_code == 201
    entries = [{"id": "tx-0", "label": 1, "source": "chargeback"}, {"id": "tx-1", "label": 0}]
    response = client.post(f"/v1/models/{MODEL}/labels", json={"labels": entries}, headers=ingest)
    assert response.status_code == 200, response.text
    assert response.json()["rows_updated"] == 2
    response = client.post(
        f"/v1/models/{MODEL}/labels",
        content=b"id,label\ntx-2,1\n",
        headers={**ingest, "Content-Type": "text/csv"},
    )
    assert response.json()["rows_updated"] == 1
    with session_factory() as session:
        got = session.execute(
            select(Prediction.prediction_id, Prediction.label, Prediction.amount, Prediction.entity)
        ).all()
    assert sorted(tuple(row) for row in got) == [
        ("tx-0", 1, 10.0, "c1"),
        ("tx-1", 0, 20.0, "c2"),
        ("tx-2", 1, 30.0, "c3"),
    ]


@pytest.mark.usefixtures("model")
def test_a_resent_row_keeps_what_it_does_not_send_and_takes_what_it_does(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """A null never erases a stored amount or entity (a feed re-sent with its labels and
    without them must not); a different one is a change, which re-queues the window."""
    made = rows(3, amount=[10.0, 20.0, 30.0], entity=["c1", "c2", "c3"])
    assert post_json(client, ingest, {"batch_id": "b1", "rows": made}).status_code == 201
    labelled = [{**row, "label": 1} for row in rows(3)]  # no amount, no entity
    answer = post_json(client, ingest, {"batch_id": "b2", "rows": labelled}).json()
    assert (answer["rows_updated"], answer["rows_unchanged"]) == (3, 0)
    assert stored(session_factory) == {
        "tx-0": (10.0, "c1"),
        "tx-1": (20.0, "c2"),
        "tx-2": (30.0, "c3"),
    }
    versions = dirty(session_factory)
    same = post_json(client, ingest, {"batch_id": "b3", "rows": made}).json()
    assert (same["rows_updated"], same["rows_unchanged"], same["windows_touched"]) == (0, 3, [])
    changed = [
        {**made[0], "amount": 11.0},
        {**made[1], "entity": "c2-bis"},
        {**made[2], "amount": 30.0},  # as stored
    ]
    answer = post_json(client, ingest, {"batch_id": "b4", "rows": changed}).json()
    assert (answer["rows_updated"], answer["rows_unchanged"]) == (2, 1)
    assert stored(session_factory) == {
        "tx-0": (11.0, "c1"),
        "tx-1": (20.0, "c2-bis"),
        "tx-2": (30.0, "c3"),
    }
    (window,) = versions
    assert dirty(session_factory) == {window: versions[window] + 1}


@pytest.mark.usefixtures("model")
def test_new_rows_beside_stored_ids_get_their_fields(
    client: TestClient, ingest: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """A batch with a stored id goes through the staged upsert: its new rows are stored with
    their amount and entity too, a stored row without them keeps its own."""
    assert post_json(client, ingest, {"batch_id": "b1", "rows": rows(1)}).status_code == 201
    made = rows(3, amount=[None, 2.0, 3.0], entity=["c0", None, "c2"])
    answer = post_json(client, ingest, {"batch_id": "b2", "rows": made}).json()
    assert (answer["rows_inserted"], answer["rows_updated"]) == (2, 1)
    assert stored(session_factory) == {
        "tx-0": (None, "c0"),
        "tx-1": (2.0, None),
        "tx-2": (3.0, "c2"),
    }
