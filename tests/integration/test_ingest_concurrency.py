"""Ingestion under concurrency (a real uvicorn process) and under a failure inside the database.

Both backends. The concurrent clients are threads with their own HTTP connections against
`calmon serve`, so requests really overlap in the server's thread pool and in the database.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.tables import Batch, Prediction, Window
from tests.support.api import AuthHeaders
from tests.support.server import LiveServer

MODEL = "fraud-v1"
START = datetime(2026, 11, 2, 9, tzinfo=UTC)
CLIENTS = 8


def rows(prefix: str, n: int, score: float = 0.25) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}-{i}",
            "timestamp": (START + timedelta(seconds=i)).isoformat(),
            "score": score,
            "label": i % 2,
        }
        for i in range(n)
    ]


def register(url: str, headers: dict[str, str]) -> None:
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "day", "timezone": "UTC"}
    response = httpx.post(f"{url}/v1/models", json=spec, headers=headers)
    assert response.status_code == 201, response.text


def counts(factory: sessionmaker[Session]) -> tuple[int, int, list[int]]:
    """(predictions, batches, dirty_version of each window)."""
    with factory() as session:
        predictions = session.scalar(select(func.count()).select_from(Prediction)) or 0
        batches = session.scalar(select(func.count()).select_from(Batch)) or 0
        versions = list(session.scalars(select(Window.dirty_version)))
    return predictions, batches, versions


def test_concurrent_batches_into_one_window_lose_nothing(
    live_server: LiveServer, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    register(live_server.base_url, auth_headers("admin"))
    headers = auth_headers("ingest")
    batches_per_client, rows_per_batch = 3, 400
    barrier = threading.Barrier(CLIENTS)

    def client_work(client_index: int) -> list[int]:
        statuses = []
        with httpx.Client(base_url=live_server.base_url, headers=headers, timeout=60) as http:
            barrier.wait()
            for batch in range(batches_per_client):
                name = f"c{client_index}-b{batch}"
                body = {"batch_id": name, "rows": rows(name, rows_per_batch)}
                statuses.append(http.post(f"/v1/models/{MODEL}/batches", json=body).status_code)
            # Every client also sends the very same batch at about the same moment: exactly
            # one of them may store it, the others must get the stored response back.
            shared = {"batch_id": "shared", "rows": rows("shared", rows_per_batch)}
            statuses.append(http.post(f"/v1/models/{MODEL}/batches", json=shared).status_code)
        return statuses

    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(client_work, range(CLIENTS)))

    own = [status for statuses in results for status in statuses[:-1]]
    shared = sorted(statuses[-1] for statuses in results)
    assert own == [201] * CLIENTS * batches_per_client
    assert shared == [200] * (CLIENTS - 1) + [201]
    expected_batches = CLIENTS * batches_per_client + 1
    assert counts(session_factory) == (
        expected_batches * rows_per_batch,
        expected_batches,
        [expected_batches],  # one window, bumped once per stored batch, never lost
    )

    # Different batch ids carrying the same new prediction ids, at once (a feed replayed by
    # several senders): no batch fails, each id is stored once, the others find them identical
    # and change nothing (no update, no window bump).
    def same_ids(client_index: int) -> dict[str, Any]:
        body = {"batch_id": f"feed-{client_index}", "rows": rows("same", 300)}
        with httpx.Client(base_url=live_server.base_url, headers=headers, timeout=60) as http:
            barrier.wait()
            response = http.post(f"/v1/models/{MODEL}/batches", json=body)
        assert response.status_code == 201, response.text
        result: dict[str, Any] = response.json()
        return result

    with ThreadPoolExecutor(CLIENTS) as pool:
        replies = list(pool.map(same_ids, range(CLIENTS)))
    assert sum(reply["rows_inserted"] for reply in replies) == 300
    assert sum(reply["rows_updated"] for reply in replies) == 0
    assert sum(reply["rows_unchanged"] for reply in replies) == 300 * (CLIENTS - 1)
    total = expected_batches + CLIENTS
    assert counts(session_factory) == (
        expected_batches * rows_per_batch + 300,
        total,
        [expected_batches + 1],
    )


@pytest.fixture
def reject_score_half(engine: Engine, backend: str) -> Iterator[None]:
    """A trigger that makes the database refuse any prediction with score 0.5.

    It stands for every rule the database enforces that the Python validation does not know
    about: the row passes validation and fails only inside the bulk statement, mid-batch.
    """
    with engine.begin() as connection:
        if backend == "postgresql":
            connection.exec_driver_sql(
                "CREATE FUNCTION reject_score_half() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN IF NEW.score = 0.5 THEN RAISE EXCEPTION 'score 0.5 refused by test' "
                "USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$"
            )
            connection.exec_driver_sql(
                "CREATE TRIGGER reject_score_half BEFORE INSERT OR UPDATE ON predictions "
                "FOR EACH ROW EXECUTE FUNCTION reject_score_half()"
            )
        else:
            connection.exec_driver_sql(
                "CREATE TRIGGER reject_score_half BEFORE INSERT ON predictions "
                "WHEN NEW.score = 0.5 BEGIN SELECT RAISE(ABORT, 'score 0.5 refused by test'); END"
            )
    try:
        yield
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "DROP TRIGGER reject_score_half"
                + (" ON predictions" if backend == "postgresql" else "")
            )
            if backend == "postgresql":
                connection.exec_driver_sql("DROP FUNCTION reject_score_half()")


@pytest.mark.parametrize("updates_a_stored_row", [True, False], ids=["upsert", "plain-insert"])
def test_a_batch_refused_inside_the_database_leaves_nothing_behind(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    reject_score_half: None,
    updates_a_stored_row: bool,
) -> None:
    """Both write paths: all ids new (plain INSERT in a savepoint) and some stored (upsert)."""
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "day", "timezone": "UTC"}
    assert client.post("/v1/models", json=spec, headers=auth_headers("admin")).status_code == 201
    headers = auth_headers("ingest")
    url = f"/v1/models/{MODEL}/batches"
    assert (
        client.post(
            url, json={"batch_id": "ok", "rows": rows("ok", 100)}, headers=headers
        ).status_code
        == 201
    )
    before = counts(session_factory)

    poisoned = rows("bad", 2_000)
    poisoned[1_500]["score"] = 0.5  # valid for calmon, refused by the database
    if updates_a_stored_row:
        poisoned[10]["id"] = "ok-3"  # an update of a stored row, which must be undone too
    response = client.post(url, json={"batch_id": "bad", "rows": poisoned}, headers=headers)

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "rejected_by_database"
    assert "score 0.5 refused by test" in error["message"]
    assert counts(session_factory) == before == (100, 1, [1])
    with session_factory() as session:
        assert (
            session.scalar(select(Prediction.label).where(Prediction.prediction_id == "ok-3")) == 1
        )
