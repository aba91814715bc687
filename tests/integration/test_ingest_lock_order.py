"""Concurrent batches that carry the same ids in different orders (issue 16, finding 4).

On PostgreSQL each batch's upsert locks its rows one by one; two batches locking the same ids
in opposite orders wait for each other until the deadlock detector aborts one of them. The
rows are written in id order, so every batch locks them in the same order and none has to be
aborted. A real server, real concurrent clients; both backends.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.tables import Prediction
from tests.support.api import AuthHeaders
from tests.support.server import LiveServer

MODEL = "fraud-v1"
START = datetime(2026, 11, 2, 9, tzinfo=UTC)
CLIENTS = 6
ROUNDS = 3
IDS = 300


def _rows(order: list[int], label: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"tx-{i:05d}",
            "timestamp": (START + timedelta(seconds=i)).isoformat(),
            "score": (i % 100) / 100,
            "label": label,
        }
        for i in order
    ]


def _shuffled_rounds(client: int) -> Iterator[tuple[int, list[int]]]:
    """(round, every id index in this client's order for that round), seeded by the client."""
    shuffle = random.Random(client)
    for round_ in range(ROUNDS):
        order = list(range(IDS))
        shuffle.shuffle(order)
        yield round_, order


def _register(live_server: LiveServer, auth_headers: AuthHeaders) -> None:
    spec = {"name": MODEL, "threshold": 0.5, "granularity": "hour", "timezone": "UTC"}
    created = httpx.post(
        f"{live_server.base_url}/v1/models", json=spec, headers=auth_headers("admin")
    )
    assert created.status_code == 201, created.text


def test_batches_resending_ids_in_different_orders_all_succeed(
    live_server: LiveServer, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    _register(live_server, auth_headers)
    headers = auth_headers("ingest")
    barrier = threading.Barrier(CLIENTS)

    def client_work(client: int) -> list[tuple[int, str]]:
        answers = []
        with httpx.Client(base_url=live_server.base_url, headers=headers, timeout=120) as http:
            for round_, order in _shuffled_rounds(client):
                body = {"batch_id": f"c{client}-r{round_}", "rows": _rows(order, client % 2)}
                barrier.wait()  # every round, all clients send at the same moment
                response = http.post(f"/v1/models/{MODEL}/batches", json=body)
                answers.append((response.status_code, response.text[:300]))
        return answers

    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = [a for client in pool.map(client_work, range(CLIENTS)) for a in client]
    refused = [answer for answer in answers if answer[0] != 201]
    assert refused == []
    with session_factory() as session:
        stored = session.scalar(select(func.count()).select_from(Prediction))
    assert stored == IDS


def test_label_updates_in_different_orders_all_succeed(
    live_server: LiveServer, auth_headers: AuthHeaders
) -> None:
    _register(live_server, auth_headers)
    headers = auth_headers("ingest")
    with httpx.Client(base_url=live_server.base_url, headers=headers, timeout=120) as http:
        body = {"batch_id": "first", "rows": _rows(list(range(IDS)), 0)}
        assert http.post(f"/v1/models/{MODEL}/batches", json=body).status_code == 201
    barrier = threading.Barrier(CLIENTS)

    def client_work(client: int) -> list[int]:
        statuses = []
        with httpx.Client(base_url=live_server.base_url, headers=headers, timeout=120) as http:
            for round_, order in _shuffled_rounds(client):
                labels = [{"id": f"tx-{i:05d}", "label": (client + round_) % 2} for i in order]
                barrier.wait()
                response = http.post(f"/v1/models/{MODEL}/labels", json={"labels": labels})
                statuses.append(response.status_code)
        return statuses

    with ThreadPoolExecutor(CLIENTS) as pool:
        statuses = [s for client in pool.map(client_work, range(CLIENTS)) for s in client]
    assert statuses == [200] * (CLIENTS * ROUNDS)
