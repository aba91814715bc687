"""What the partitioned layout of predictions costs and buys (PostgreSQL, migration 0011).

    python -m bench.partitions --database-url postgresql+psycopg://postgres@127.0.0.1/scratch

On a scratch database (its calmon tables are emptied first and last), one model gets
``--weeks`` week tables of ``--rows-per-week`` random-id rows each, written by calmon's own
write path. Then, each figure a median over repeated, interleaved runs:

1. a late label: ``update_labels`` for ``--labels`` ids spread over every week (through
   prediction_keys: one key probe, then one probe of the week the key names), against the
   same UPDATE matching on (model_id, prediction_id) alone, which has to probe every week's
   index; both with EXPLAIN (ANALYZE, BUFFERS): buffers touched per label;
2. a batch of new rows: calmon's COPY into prediction_keys + the week table, against a COPY of
   the same bytes into a plain, unpartitioned copy of the table with the old primary key;
3. the worker's read of one (model, window): partitions in its plan;
4. dropping a week: DETACH CONCURRENTLY + DROP, against deleting the same rows in
   50,000-row chunks from the plain table; then dropping the whole model (what a purge does).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.db.partitions import KEYS, PREDICTIONS, drop_partition, model_table, week_table
from app.db.repositories.ingest import ingest_repository
from app.db.repositories.labels import LabelRepository
from app.db.repositories.staged_rows import (
    PREDICTION_COLUMNS,
    StagedLabels,
    StagedRows,
    predictions_copy_data,
)
from app.db.repositories.window_rows import _PG_QUERY  # the worker's own statement
from app.db.types import utcnow
from app.monitoring.vocabulary import LABEL_SOURCE_CODES, UNKNOWN_LABEL_TIME
from app.schemas.models import ModelCreate
from app.services.models import add_model
from app.settings import Settings
from bench.ingest_floors import labelled_rows, make_ids, write_calmon_floor
from bench.load_growth import TABLES

MONDAY = datetime(2025, 1, 6, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PLAIN = "bench_predictions_plain"
_COLUMNS = ", ".join(PREDICTION_COLUMNS)  # predictions_copy_data's stream


def _micros(instant: datetime) -> int:
    return (instant - _EPOCH) // timedelta(microseconds=1)


def week_rows(model_id: int, week: int, rows: int, rng: np.random.Generator) -> StagedRows:
    """``rows`` random-id rows on the Monday..Sunday daily windows of week number ``week``."""
    start = _micros(MONDAY + timedelta(weeks=week))
    days = rng.integers(0, 7, rows)
    windows = start + days * 86_400_000_000
    return labelled_rows(
        model_id,
        make_ids("random", "w", 0, rows, rng),
        micros=windows + rng.integers(0, 86_400_000_000, rows),
        windows=windows.astype(np.int64),
        scores=rng.random(rows),
        labels=np.where(rng.random(rows) < 0.5, -1, 0).astype(np.int8),
        segments=["all"] * rows,
    )


def _raw(session: Session) -> psycopg.Connection[Any]:
    raw = session.connection().connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    return raw


def _explain_buffers(session: Session, sql: str, params: dict[str, Any]) -> int:
    plan = session.execute(text("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql), params)
    top = plan.scalar_one()[0]["Plan"]
    return int(top["Shared Hit Blocks"] + top["Shared Read Blocks"])


def label_lookup(factory: sessionmaker[Session], model_id: int, ids: list[str]) -> dict[str, float]:
    """Seconds and buffers of a label update through the keys, and of the keyless UPDATE."""
    labels = [1] * len(ids)
    with factory() as session:
        started = time.perf_counter()
        staged = StagedLabels(
            ids,
            np.array(labels, dtype=np.int8),
            np.full(len(ids), UNKNOWN_LABEL_TIME, dtype=np.int64),
            np.full(len(ids), LABEL_SOURCE_CODES["chargeback"], dtype=np.int8),
        )
        LabelRepository(session).update(model_id, staged, utcnow())
        keyed = time.perf_counter() - started
        session.rollback()
    with factory() as session:
        session.execute(
            text('CREATE TEMPORARY TABLE s (prediction_id varchar(200) COLLATE "C", label int2)')
        )
        with _raw(session).cursor() as cursor:
            cursor.executemany("INSERT INTO s VALUES (%s, 1)", [(i,) for i in ids])
        session.execute(text("ANALYZE s"))
        params = {"model_id": model_id}
        keyless_sql = (
            "UPDATE predictions p SET label = s.label FROM s WHERE p.model_id = :model_id "
            "AND p.prediction_id = s.prediction_id"
        )
        keyed_sql = (
            "UPDATE predictions p SET label = s.label FROM s JOIN prediction_keys k "
            "ON k.model_id = :model_id AND k.prediction_id = s.prediction_id "
            "WHERE p.model_id = :model_id AND p.prediction_id = s.prediction_id "
            "AND p.window_start = k.window_start"
        )
        started = time.perf_counter()
        keyless_buffers = _explain_buffers(session, keyless_sql, params)
        keyless = time.perf_counter() - started
        keyed_buffers = _explain_buffers(session, keyed_sql, params)
        session.rollback()
    return {
        "keyed_s": keyed,
        "keyless_s": keyless,
        "keyed_buffers_per_label": keyed_buffers / len(ids),
        "keyless_buffers_per_label": keyless_buffers / len(ids),
    }


def copy_batches(
    engine: Engine, factory: sessionmaker[Session], model_id: int, week: int, rounds: int
) -> dict[str, float]:
    """Median seconds of a 50,000-row COPY: partitioned (keys + week table) vs plain."""
    rng = np.random.default_rng(11)
    partitioned, plain = [], []
    for _ in range(rounds):
        rows = week_rows(model_id, week, 50_000, rng)
        predictions, _ = predictions_copy_data(rows)
        with factory.begin() as session:
            started = time.perf_counter()
            ingest_repository(session).write_rows(rows)
            partitioned.append(time.perf_counter() - started)
        with factory.begin() as session, _raw(session).cursor() as cursor:
            started = time.perf_counter()
            with cursor.copy(f"COPY {_PLAIN} ({_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(predictions)
            plain.append(time.perf_counter() - started)
    return {"partitioned_s": float(np.median(partitioned)), "plain_s": float(np.median(plain))}


def worker_read_partitions(factory: sessionmaker[Session], model_id: int, week: int) -> int:
    window = MONDAY + timedelta(weeks=week, days=2)
    with factory() as session, _raw(session).cursor() as cursor:
        cursor.execute(
            "EXPLAIN (FORMAT JSON) " + _PG_QUERY, {"model": model_id, "start": window, "none": -1}
        )
        row = cursor.fetchone()
    assert row is not None
    return str(row[0]).count("'Relation Name'")


def drop_week(
    engine: Engine, factory: sessionmaker[Session], model_id: int, week: int
) -> dict[str, float]:
    start = MONDAY + timedelta(weeks=week)
    with factory.begin() as session:
        session.execute(
            text(
                f"INSERT INTO {_PLAIN} SELECT * FROM predictions WHERE model_id = :model_id "
                "AND window_start >= :start AND window_start < :end"
            ),
            {"model_id": model_id, "start": start, "end": start + timedelta(weeks=1)},
        )
        session.execute(
            text(
                "DELETE FROM prediction_keys WHERE model_id = :model_id "
                "AND window_start >= :start AND window_start < :end"
            ),
            {"model_id": model_id, "start": start, "end": start + timedelta(weeks=1)},
        )
    started = time.perf_counter()
    drop_partition(engine, model_table(PREDICTIONS, model_id), week_table(model_id, start))
    dropped = time.perf_counter() - started
    started = time.perf_counter()
    deleted = 1
    while deleted:
        with factory.begin() as session:
            deleted = session.execute(
                text(
                    f"DELETE FROM {_PLAIN} WHERE ctid IN (SELECT ctid FROM {_PLAIN} "
                    "WHERE model_id = :model_id AND window_start >= :start "
                    "AND window_start < :end LIMIT 50000)"
                ),
                {"model_id": model_id, "start": start, "end": start + timedelta(weeks=1)},
            ).rowcount  # type: ignore[attr-defined]
    return {"drop_s": dropped, "chunked_delete_s": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--weeks", type=int, default=50)
    parser.add_argument("--rows-per-week", type=int, default=20_000)
    parser.add_argument("--labels", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    upgrade(args.database_url)
    engine = create_db_engine(Settings(database_url=args.database_url, migrate_on_start=False))
    factory = create_session_factory(engine)
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES}"))
        connection.execute(text("DELETE FROM models"))
        connection.execute(text(f"DROP TABLE IF EXISTS {_PLAIN}"))
        connection.execute(
            text(
                f"CREATE TABLE {_PLAIN} (LIKE predictions INCLUDING DEFAULTS, "
                "PRIMARY KEY (model_id, prediction_id))"
            )
        )
        connection.execute(text(f"CREATE INDEX ON {_PLAIN} (model_id, window_start)"))
    with factory.begin() as session:
        spec = ModelCreate(name="weeks", threshold=0.5, granularity="day", timezone="UTC")
        model_id = add_model(session, spec).id
    rng = np.random.default_rng(5)
    stored: list[str] = []
    for week in range(args.weeks):
        rows = week_rows(model_id, week, args.rows_per_week, rng)
        write_calmon_floor(factory, rows)
        stored += rows.ids[:: max(1, args.rows_per_week // 200)]
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE predictions"))
        connection.execute(text("VACUUM ANALYZE prediction_keys"))
    print(f"{args.weeks} week tables x {args.rows_per_week:,} rows, model {model_id}")
    figures = []
    for _ in range(args.rounds):
        ids = sorted(rng.choice(stored, args.labels, replace=False).tolist())
        figures.append(label_lookup(factory, model_id, ids))
    for key in figures[0]:
        print(
            f"label update of {args.labels} ids, {key}: {np.median([f[key] for f in figures]):.4g}"
        )
    print(
        f"copy 50,000 new rows: {copy_batches(engine, factory, model_id, args.weeks, args.rounds)}"
    )
    print(f"worker read, tables in plan: {worker_read_partitions(factory, model_id, 3)}")
    print(f"one week of {args.rows_per_week:,} rows: {drop_week(engine, factory, model_id, 1)}")
    started = time.perf_counter()
    for parent in (PREDICTIONS, KEYS):
        drop_partition(engine, parent, model_table(parent, model_id))
    print(
        f"the whole model's tables dropped (a deleted model): {time.perf_counter() - started:.3f} s"
    )
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES}"))
        connection.execute(text("DELETE FROM models"))
        connection.execute(text(f"DROP TABLE IF EXISTS {_PLAIN}"))
    engine.dispose()


if __name__ == "__main__":
    main()
