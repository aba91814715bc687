"""Speed of the analyses endpoints for models with a year of daily windows (PostgreSQL, SQLite).

Two models score the same generated traffic (a shadow deployment): W daily windows of R rows
(default 365 x 10,000, fraud rate 1% +- 30% in a wave of about six weeks), negatives N(0, 1),
positives N(2, 1) for the champion and N(2, 0.6) for the challenger. A real worker computes every
window first. Then each endpoint is called through the whole ASGI stack (the app in-process, JSON
in and out, a real database):

- ``POST /whatif`` with the default body (every metric at pi0 and at the newest fraud rate with
  1,000-replicate bootstrap intervals each, the history's range) and with a 30-point trajectory;
- ``GET /compare`` (AP difference with 1,000 replicates at two priors and over the range,
  rank inversions, both series side by side);
- ``GET /metric-catalogue``;

each cold (pooled-sketch cache emptied first: the 365 sketches are read and pooled) and warm,
against the floor ``GET /metrics`` (the existing series endpoint, 365 points) in the same run.

    python -m bench.analyses --database-url postgresql+psycopg://postgres@127.0.0.1:5432/calmon_bench
    python -m bench.analyses --database-url sqlite:////tmp/calmon-bench.sqlite3

The database's calmon tables are emptied first (it must be a scratch database).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy import insert, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.db.partitions import ensure_partitions, week_starts
from app.db.tables import Prediction, Window
from app.schemas.models import ModelCreate
from app.services.models import add_model
from app.services.periods import clear_pooled_cache
from app.settings import Settings
from app.windows.compute import ComputeOptions
from app.worker.loop import Worker, WorkerConfig
from bench.worker import store_keys_of_rows

FIRST = datetime(2025, 1, 1, tzinfo=UTC)

# One draw of labels and noise per row, shared by both models (shadow traffic).
_GENERATE = """
INSERT INTO predictions (model_id, prediction_id, window_start, ts, score, label, segment)
SELECT :model, 'p' || w || '-' || g, :first + w * interval '1 day', :first + w * interval '1 day',
       round((z * CASE WHEN lab = 1 THEN :spread ELSE 1 END + 2.0 * lab)::numeric, 4), lab, 'all'
FROM generate_series(0, :windows - 1) AS w,
     LATERAL (
       SELECT g, (random() < :pi * (1 + 0.3 * sin(w / 7.0)))::int AS lab,
              sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z
       FROM generate_series(1, :rows) AS g
       WHERE w >= 0  -- refers to w: drawn afresh for every window, not once for all
     ) AS t
"""


def _reset(factory: sessionmaker[Session]) -> None:
    with factory.begin() as session:
        if session.get_bind().dialect.name == "sqlite":
            session.execute(text("PRAGMA defer_foreign_keys = ON"))
            tables = session.scalars(
                text(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite_%' AND name != 'alembic_version'"
                )
            )
            for table in list(tables):
                session.execute(text(f'DELETE FROM "{table}"'))
        else:
            session.execute(
                text(
                    "TRUNCATE models, predictions, prediction_keys, windows "
                    "RESTART IDENTITY CASCADE"
                )
            )


def _insert_generated(session: Session, model_id: int, spread: float, args: Any) -> None:
    """The same traffic drawn by numpy (SQLite has no generate_series or normal draws)."""
    rng = np.random.default_rng(42)  # the same seed for both models: shadow traffic
    for w in range(args.windows):
        start = FIRST + timedelta(w)
        labels = (rng.random(args.rows) < args.pi * (1 + 0.3 * math.sin(w / 7.0))).astype(int)
        z = rng.standard_normal(args.rows)
        scores = np.round(z * np.where(labels == 1, spread, 1.0) + 2.0 * labels, 4)
        session.execute(
            insert(Prediction),
            [
                {
                    "model_id": model_id,
                    "prediction_id": f"p{w}-{g + 1}",
                    "window_start": start,
                    "ts": start,
                    "score": float(score),
                    "label": int(label),
                    "segment": "all",
                }
                for g, (score, label) in enumerate(zip(scores, labels, strict=True))
            ],
        )


def _load(factory: sessionmaker[Session], name: str, spread: float, args: Any) -> None:
    with factory.begin() as session:
        model = add_model(session, ModelCreate(name=name, threshold=1.5, min_label_coverage=0.8))
        if session.get_bind().dialect.name == "sqlite":
            _insert_generated(session, model.id, spread, args)
        else:
            session.execute(text("SELECT setseed(0.42)"))
            params = {
                "model": model.id,
                "first": FIRST,
                "windows": args.windows,
                "rows": args.rows,
                "pi": args.pi,
                "spread": spread,
            }
            first = (FIRST - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
            days = first + np.arange(args.windows, dtype=np.int64) * 86_400_000_000
            # Migration 0011: the week tables first, then the ids' keys with the rows.
            ensure_partitions(session.connection(), model.id, week_starts(days))
            session.execute(text(_GENERATE), params)
            store_keys_of_rows(session, params)
        for w in range(args.windows):
            session.add(
                Window(model_id=model.id, window_start=FIRST + timedelta(w), dirty_version=1)
            )


def _timed(call: Callable[[], Any], repeats: int, *, cold: bool) -> list[float]:
    runs = []
    for _ in range(repeats):
        if cold:
            clear_pooled_cache()
        start = time.perf_counter()
        call()
        runs.append(time.perf_counter() - start)
    return runs


def _ok(response: Any) -> Any:
    if response.status_code != 200:
        raise RuntimeError(f"{response.status_code}: {response.text}")
    return response.json()


def main(argv: list[str] | None = None) -> int:
    """Load, compute, time every endpoint; print medians and ratios to the series floor."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--windows", type=int, default=365)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--pi", type=float, default=0.01)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--keep", action="store_true", help="leave the models and windows in the database"
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="time the models a previous --keep run left (no load, no worker)",
    )
    args = parser.parse_args(argv)
    settings = Settings(database_url=args.database_url, auth_disabled=True)
    upgrade(args.database_url)
    engine = create_db_engine(settings)
    factory = create_session_factory(engine)
    computed = 0.0
    try:
        if not args.reuse:
            _reset(factory)
            _load(factory, "champion", 1.0, args)
            _load(factory, "challenger", 0.6, args)
            started = time.perf_counter()
            Worker(factory, WorkerConfig(options=ComputeOptions(replicates=100))).drain()
            computed = time.perf_counter() - started
        with TestClient(create_app(settings)) as client:
            base = "/v1/models/champion"
            trajectory = {"points": [[t, 0.01 * 1.05**t] for t in range(30)]}
            calls: dict[str, Callable[[], Any]] = {
                "GET /metrics (floor)": lambda: _ok(client.get(f"{base}/metrics")),
                "POST /whatif (default)": lambda: _ok(client.post(f"{base}/whatif", json={})),
                "POST /whatif (trajectory)": lambda: _ok(
                    client.post(
                        f"{base}/whatif",
                        json={"trajectory": trajectory, "range": None, "intervals": False},
                    )
                ),
                "GET /compare": lambda: _ok(
                    client.get(f"{base}/compare", params={"challenger": "challenger"})
                ),
                "GET /metric-catalogue": lambda: _ok(client.get(f"{base}/metric-catalogue")),
            }
            for call in calls.values():  # warm the import and connection paths once
                call()
            rows = []
            for label, call in calls.items():
                for cold in (True, False):
                    runs = _timed(call, args.repeats, cold=cold)
                    rows.append((label, "cold" if cold else "warm", runs))
            summary = _ok(client.get(f"{base}/compare", params={"challenger": "challenger"}))
            period = _ok(client.post(f"{base}/whatif", json={"intervals": False}))["period"]
    finally:
        if not args.keep:
            _reset(factory)
        engine.dispose()
    floor = statistics.median(next(r for label, mode, r in rows if mode == "warm"))
    print(
        f"{args.windows} windows x {args.rows:,} rows a model, 2 models (worker: {computed:.0f} s)"
    )
    print(f"pooled: {period['windows']} windows, {period['positives']:,} positives a model")
    print(f"{'endpoint':30} {'cache':5} {'median ms':>10} {'max ms':>8} {'/ floor':>8}")
    for label, mode, runs in rows:
        median = statistics.median(runs)
        print(
            f"{label:30} {mode:5} {1000 * median:10.1f} {1000 * max(runs):8.1f} "
            f"{median / floor:8.2f}"
        )
    print(f"compare summary: {summary['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
