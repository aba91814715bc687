"""A digest of everything the worker stores for one seeded stream: a speed change that must
change no number is checked by running this before and after it (the digests must be equal).

A model of ``--windows`` daily windows of ``--rows`` generated rows in ``--segments`` segments
(rows generated inside PostgreSQL with a fixed seed, as bench/worker.py does, pi0 from the
labelled history) is drained window by window, oldest first; then every stored value that does
not record when or how long (the window metrics and their values, the intervals and their prior
grids, the sketches and score counts, pi0 versions, frozen references, verdicts, evidence,
nowcasts, early estimates and alert states) is hashed, one digest per table.

    python -m bench.worker_digest --database-url postgresql+psycopg://postgres@127.0.0.1:5432/x

With ``--fields`` every row also has an amount and a card (seeded, about three rows a card)
and the model an alert budget (1% of a window's rows) and a review cost: the money and card
metrics' paths (issue 24) in the digest too.

The database's calmon tables are emptied first (it must be a scratch database).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import MonitoredModel
from app.db.types import utcnow
from app.settings import Settings
from app.windows.compute import ComputeOptions, compute_claim
from bench.worker import OWNER, _load, _reset

TABLES = {
    "window_metrics": "model_id, window_start, segment",
    "window_metric_values": "model_id, window_start, segment, metric",
    "pi0_versions": "model_id, version",
    "segment_references": "model_id, segment, version",
    "alert_states": "model_id, segment",
    "score_bins": "model_id",
}
WHEN = {"computed_at", "duration_seconds", "judged_at", "updated_at", "frozen_at", "created_at"}
"""Columns that record when or how long, not what: left out of the digest."""


def _scrub(value: Any) -> Any:
    """``value`` without the keys that record when (they sit inside the JSON columns too)."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in WHEN}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def digests(engine: Engine, *, by_column: bool = False) -> dict[str, tuple[int, str]]:
    """Per table: its rows and the hash of their values (in key order); with ``by_column``,
    also one entry per column (``table.column``), to tell which values a change moved."""
    out = {}
    with engine.connect() as connection:
        for table, key in TABLES.items():
            result = connection.execute(text(f"SELECT * FROM {table} ORDER BY {key}"))
            names = result.keys()  # a result's keys: iterating the result gives its rows
            columns = [c for c in names if c not in WHEN]
            digest = hashlib.sha256()
            per_column = {c: hashlib.sha256() for c in columns}
            rows = 0
            for row in result.mappings():
                values = {c: _scrub(row[c]) for c in columns}
                digest.update(json.dumps(values, sort_keys=True, default=repr).encode())
                for c in columns:
                    per_column[c].update(
                        json.dumps(values[c], sort_keys=True, default=repr).encode()
                    )
                rows += 1
            out[table] = (rows, digest.hexdigest()[:16])
            if by_column:
                for c in columns:
                    out[f"{table}.{c}"] = (rows, per_column[c].hexdigest()[:16])
    return out


def _seeded_fields(factory: sessionmaker[Session], model_id: int, rows: int) -> None:
    """Every row of the model a seeded amount and card (as bench/worker.py's window with the
    fields, but the same values every run), the model an alert budget and a review cost."""
    with factory.begin() as session:
        session.execute(text("SELECT setseed(0.17)"))
        session.execute(
            text(
                "UPDATE predictions SET amount = round(exp(3 + 1.2 * sqrt(-2 * ln(1 - random()))"
                " * cos(2 * pi() * random()))::numeric, 2)::float8, "
                "entity = 'card-' || floor(random() * :cards)::bigint WHERE model_id = :model"
            ),
            {"model": model_id, "cards": max(1, rows // 3)},
        )
        model = session.get(MonitoredModel, model_id)
        assert model is not None
        model.alert_capacity, model.review_cost = max(1, rows // 100), 2.0


def main(argv: list[str] | None = None) -> int:
    """Drain the seeded stream and print one digest per table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--windows", type=int, default=40)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--segments", type=int, default=3)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument(
        "--by-column", action="store_true", help="also a digest per column of every table"
    )
    parser.add_argument(
        "--fields", action="store_true", help="amounts, cards, an alert budget, a review cost"
    )
    args = parser.parse_args(argv)
    settings = Settings(database_url=args.database_url)
    upgrade(args.database_url)
    engine = create_db_engine(settings)
    factory = create_session_factory(engine)
    options = ComputeOptions(replicates=args.replicates)
    try:
        _reset(engine)
        model_id = _load(
            factory, "digest", args.windows, args.rows, segments=args.segments, pi0_fixed=None
        )
        if args.fields:
            _seeded_fields(factory, model_id, args.rows)
        computed = 0
        while True:
            with factory.begin() as session:
                claim = WindowQueueRepository(session).claim_next(
                    OWNER, timedelta(minutes=10), utcnow()
                )
            if claim is None:
                break
            compute_claim(factory, claim, OWNER, options)
            computed += 1
        with engine.connect() as connection:
            judged = connection.scalar(
                text("SELECT count(*) FROM window_metrics WHERE evidence IS NOT NULL")
            )
            estimated = connection.scalar(
                text("SELECT count(*) FROM window_metrics WHERE nowcast IS NOT NULL")
            )
        print(f"{computed} windows computed, {judged} judged, {estimated} nowcast")
        for table, (rows, digest) in digests(engine, by_column=args.by_column).items():
            print(f"  {table:22} {rows:6} rows  {digest}")
        _reset(engine)
    finally:
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
