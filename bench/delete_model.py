"""Deleting a large model while another one ingests: how long the request takes, how long each
purge transaction takes, and whether the other model's batches slow down meanwhile.

    python -m bench.delete_model --database-url postgresql+psycopg://postgres@127.0.0.1/calmon_bench

A scratch PostgreSQL database (its calmon tables are emptied). Model "gone" gets ``--rows``
predictions (generated in the database), model "busy" receives columnar JSON batches through a
real `calmon serve`: first alone, then while "gone" is deleted and its predictions purged the
way the worker does (``purge_predictions``, one chunk per transaction), in a second thread.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import create_session_factory
from app.schemas.models import ModelCreate
from app.services.models import add_model, purge_predictions
from app.services.tokens import create_token
from bench.arguments import write_load_parser
from bench.ingest import MODEL, columnar_body, make_batches, post_batch, prepare, reset
from bench.ingest_floors import preload
from tests.support.server import bearer_client, running_server


def _ms(values: list[float]) -> str:
    if not values:
        return "none"
    p50, p99 = np.percentile(values, [50, 99])
    worst = max(values) * 1e3
    return f"{len(values)} x, p50 {p50 * 1e3:.0f} ms, p99 {p99 * 1e3:.0f} ms, max {worst:.0f} ms"


def run(database_url: str, rows: int, batch_rows: int, chunk_rows: int) -> None:
    _settings, engine, busy_id, token = prepare(database_url)  # MODEL is the busy one
    factory = create_session_factory(engine)
    with factory.begin() as session:
        spec = ModelCreate(name="gone", threshold=0.5, granularity="day", timezone="UTC")
        gone_id = add_model(session, spec).id
    preload(engine, gone_id, "random", rows, datetime(2026, 11, 1, tzinfo=UTC))
    bodies = _bodies(batch_rows)
    alone: list[float] = []
    during: list[float] = []
    chunks: list[float] = []
    purging = threading.Event()
    purged = threading.Event()

    def purge() -> None:
        purging.wait()
        while True:
            start = time.perf_counter()
            if not purge_predictions(factory, chunk_rows):
                break
            chunks.append(time.perf_counter() - start)
        purged.set()

    purger = threading.Thread(target=purge)
    purger.start()
    try:
        with (
            running_server(database_url) as server,
            bearer_client(server.base_url, token) as http,
        ):
            for _ in range(5):
                batch_id, body = next(bodies)
                alone.append(post_batch(http, MODEL, body, "application/json", batch_id))
            admin = _admin_token(factory)
            start = time.perf_counter()
            response = http.delete("/v1/models/gone", headers={"Authorization": f"Bearer {admin}"})
            request_seconds = time.perf_counter() - start
            assert response.status_code == 200, response.text
            purge_start = time.perf_counter()
            purging.set()
            while not purged.is_set():
                batch_id, body = next(bodies)
                during.append(post_batch(http, MODEL, body, "application/json", batch_id))
            purge_seconds = time.perf_counter() - purge_start
    finally:
        purging.set()
        purger.join()
        with engine.begin() as connection:
            left = connection.execute(
                text("SELECT count(*) FROM predictions WHERE model_id = :id"), {"id": gone_id}
            ).scalar_one()
        reset(engine)
        engine.dispose()
    print(f"\ndeleting a model of {rows:,} predictions (PostgreSQL, one run), busy id {busy_id}")
    print(f"  DELETE request: {request_seconds * 1e3:.0f} ms")
    print(f"  purge: {purge_seconds:.1f} s in chunks of {chunk_rows:,}: {_ms(chunks)}")
    print(f"  rows left after the purge: {left}")
    print(f"  other model's {batch_rows:,}-row batches alone:         {_ms(alone)}")
    print(f"  other model's {batch_rows:,}-row batches during purge: {_ms(during)}")


def _bodies(batch_rows: int) -> Iterator[tuple[str, bytes]]:
    """Endless batches for the busy model, made as they are needed."""
    for number in itertools.count():
        (batch,) = make_batches(batch_rows, batch_rows, ids="random", tag="b", seed=number)
        batch = dataclasses.replace(batch, batch_id=f"busy-{number}")
        yield batch.batch_id, columnar_body(batch)


def _admin_token(factory: sessionmaker[Session]) -> str:
    with factory.begin() as session:
        return create_token(session, "bench-admin", ["admin"]).token


def main(argv: list[str] | None = None) -> int:
    parser = write_load_parser(__doc__, rows=2_000_000)
    parser.add_argument("--chunk-rows", type=int, default=50_000)
    args = parser.parse_args(argv)
    run(args.database_url, args.rows, args.batch_rows, args.chunk_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
