"""A long load through calmon's own write path: does a batch get slower as the store grows, and
how much WAL does each batch write?

    python -m bench.load_growth --database-url postgresql+psycopg://postgres@127.0.0.1/scratch \
        --rows 10000000 --ids random

Every batch is written the way the API writes it once the request is parsed (the calmon floor of
bench/ingest.py: model locked, ``write_rows``, windows marked dirty, one transaction), so the
same script measures whatever schema the code at hand migrates to. Time moves forward with the
load like live traffic: ``--days`` daily windows spread over the rows, so the last million rows
land in later windows (and, when predictions is partitioned, later partitions) than the first.
Per batch: seconds, and the WAL it wrote: with pg_walinspect (PostgreSQL 15 contrib, created in
the scratch database if allowed) the records of this database's tables between
``pg_current_wal_lsn()`` before and after, every 10th batch; without it the server's whole WAL
between the two, which counts other databases' writes too. Printed per
million rows: median and p90 batch time, median WAL per batch; then the last million's median
over the first million's (the issue's target: within 1.3x).

``--scratch-cluster defaults|compose`` runs on a cluster of the bench's own instead
(bench/cluster.py): PostgreSQL's default settings, or the ones docker-compose.yml gives its
postgres service. ``--checkpoint-every-rows`` forces a CHECKPOINT at that cadence, as a server's
checkpoint_timeout would in a longer life: after each one, the first change to every index page
writes a full-page image, which a load shorter than checkpoint_timeout would otherwise never pay.
The checkpoints the run saw (timed, requested by WAL volume, forced) are printed.

``--writer`` chooses what writes each batch, so that calmon's growth can be read beside the
growth of the cheapest writes with the same guarantees: ``calmon`` (its repository code, above),
``best`` (bench/ingest_floors.py's best floor: plain binary COPY into the same keys and week
tables) and ``one-table`` (plain binary COPY into one unpartitioned table with predictions'
columns, keyed as predictions was before migration 0011: primary key (model, id), an index on
(model, window)). Whatever slows down with the store in all three is the unique index over
random ids, not calmon's code.

The database's calmon tables are emptied first (it must be a scratch database).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.db.repositories.staged_rows import StagedRows
from app.ingest.windows import floor_to_windows
from app.schemas.models import ModelCreate
from app.services.models import add_model
from app.settings import Settings
from bench.cluster import compose_settings, scratch_cluster
from bench.ingest_floors import (
    ID_PATTERNS,
    best_floor_rows,
    labelled_rows,
    make_ids,
    write_best_floor,
    write_calmon_floor,
)

START_MICROS = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp()) * 1_000_000
DAY_MICROS = 86_400 * 1_000_000
MILLION = 1_000_000
TABLES = "predictions, prediction_keys, windows, batches"
WRITERS = ("calmon", "best", "one-table")
ONE_TABLE = "load_growth_one_table"
# predictions' columns, keyed as before migration 0011 partitioned it.
_ONE_TABLE_DDL = (
    f"CREATE TABLE {ONE_TABLE} (LIKE predictions INCLUDING DEFAULTS INCLUDING CONSTRAINTS, "
    "PRIMARY KEY (model_id, prediction_id)); "
    f"CREATE INDEX ON {ONE_TABLE} (model_id, window_start)"
)


@dataclass(frozen=True)
class BatchFigure:
    rows_before: int
    seconds: float
    wal_bytes: int


def batch_rows(  # noqa: PLR0913 - one batch's coordinates in the load
    model_id: int, number: int, size: int, *, pattern: str, days: int, total: int, seed: int
) -> StagedRows:
    """Batch ``number``: ids of ``pattern``, timestamps in its slice of the load's time span."""
    rng = np.random.default_rng([seed, number])
    first = number * size
    span = days * DAY_MICROS
    begin = START_MICROS + span * first // total
    end = START_MICROS + span * (first + size) // total
    micros = np.sort(rng.integers(begin, max(end, begin + 1), size))
    positives = rng.random(size) < 0.005
    labels = np.where(rng.random(size) < 0.7, positives.astype(np.int8), -1).astype(np.int8)
    return labelled_rows(
        model_id,
        make_ids(pattern, "g", first, size, rng),
        micros=micros,
        windows=floor_to_windows(micros, "day", "UTC"),
        scores=np.clip(rng.beta(1, 8, size) + 0.5 * positives, 0, 1).round(6),
        labels=labels,
        segments=rng.choice(["FR", "DE", "ES", "IT"], size).tolist(),
    )


def wal_position(engine: Engine) -> str:
    with engine.connect() as connection:
        return str(connection.execute(text("SELECT pg_current_wal_lsn()")).scalar_one())


def wal_bytes(engine: Engine, start: str, end: str, exact: bool) -> int:
    """WAL written between two positions: all of the server's, or (``exact``, every 10th batch
    to keep the run short) only the records of this database's tables, read back with
    pg_walinspect, so that other databases' writes on the server do not count."""
    with engine.connect() as connection:
        if not exact:
            return int(
                connection.execute(
                    text("SELECT CAST(:end AS pg_lsn) - CAST(:start AS pg_lsn)"),
                    {"start": start, "end": end},
                ).scalar_one()
            )
        database = connection.execute(
            text("SELECT oid FROM pg_database WHERE datname = current_database()")
        ).scalar_one()
        return int(
            connection.execute(
                text(
                    "SELECT coalesce(sum(record_length), 0) FROM "
                    # Up to what is flushed: the batch's commit was, another's may not be.
                    "pg_get_wal_records_info(CAST(:start AS pg_lsn), "
                    "LEAST(CAST(:end AS pg_lsn), pg_current_wal_flush_lsn())) "
                    "WHERE block_ref LIKE :pattern"
                ),
                {"start": start, "end": end, "pattern": f"%/{database}/%"},
            ).scalar_one()
        )


def checkpoints(engine: Engine) -> int:
    """Checkpoints the server has started since its statistics were reset."""
    with engine.connect() as connection:
        return int(
            connection.execute(
                text("SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
            ).scalar_one()
        )


@dataclass(frozen=True)
class Load:
    """The load's shape."""

    rows: int
    size: int
    pattern: str
    days: int
    checkpoint_every_rows: int | None
    writer: str = "calmon"


def write_batch(factory: sessionmaker[Session], staged: StagedRows, writer: str) -> float:
    """Seconds ``writer`` takes to write the batch (rows converted for a plain COPY before)."""
    if writer == "calmon":
        return write_calmon_floor(factory, staged)
    copy_rows = best_floor_rows(staged)
    one_table = ONE_TABLE if writer == "one-table" else None
    return write_best_floor(factory, staged.model_id, copy_rows, one_table=one_table)


def empty(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {TABLES}"))
        connection.execute(text("DELETE FROM models"))
        connection.execute(text(f"DROP TABLE IF EXISTS {ONE_TABLE}"))


def run(engine: Engine, factory: sessionmaker[Session], load: Load) -> list[BatchFigure]:
    empty(engine)
    if load.writer == "one-table":
        with engine.begin() as connection:
            connection.execute(text(_ONE_TABLE_DDL))
    with factory.begin() as session:
        spec = ModelCreate(name="load-growth", threshold=0.5, granularity="day", timezone="UTC")
        model_id = add_model(session, spec).id
    exact = _walinspect(engine)
    figures = []
    rows, size = load.rows, load.size
    for number in range(rows // size):
        staged = batch_rows(
            model_id, number, size, pattern=load.pattern, days=load.days, total=rows, seed=7
        )
        every = load.checkpoint_every_rows
        if every and number and number * size % every == 0:
            with engine.connect() as connection:
                connection.execute(text("CHECKPOINT"))
        before = wal_position(engine)
        seconds = write_batch(factory, staged, load.writer)
        sampled = exact and number % 10 == 0
        wal = (
            wal_bytes(engine, before, wal_position(engine), sampled) if sampled or not exact else -1
        )
        figures.append(BatchFigure(number * size, seconds, wal))
        if (number + 1) * size % MILLION == 0:
            print(f"  {(number + 1) * size:>11,} rows stored", file=sys.stderr, flush=True)
    return figures


def stored_sizes(engine: Engine) -> dict[str, int]:
    """Bytes of the ids' keys (heap, indexes) and of the rows (heap, indexes) once loaded: the
    keys' indexes are what has to stay in shared_buffers (docs/scaling.md, sizing rule)."""
    with engine.connect() as connection:
        row = connection.execute(
            text(
                "SELECT coalesce(sum(pg_relation_size(oid)) FILTER (WHERE keys), 0), "
                "coalesce(sum(pg_indexes_size(oid)) FILTER (WHERE keys), 0), "
                "coalesce(sum(pg_relation_size(oid)) FILTER (WHERE NOT keys), 0), "
                "coalesce(sum(pg_indexes_size(oid)) FILTER (WHERE NOT keys), 0) "
                "FROM (SELECT oid, relname LIKE 'prediction_keys%' AS keys FROM pg_class "
                "WHERE relkind = 'r' AND relname ~ :tables) AS tables"
            ),
            {"tables": f"^(prediction(s|_keys)|{ONE_TABLE})"},
        ).one()
    names = ("keys heap", "keys indexes", "rows heap", "rows indexes")
    return {name: int(size) for name, size in zip(names, row, strict=True)}


def _walinspect(engine: Engine) -> bool:
    """Whether pg_walinspect (PostgreSQL 15 contrib) can be used here."""
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS pg_walinspect"))
    except Exception:
        return False
    return True


def report(figures: list[BatchFigure], pattern: str, writer: str) -> None:
    print(f"\n{pattern} ids, {writer} writer: per million rows stored before the batch")
    print("| rows stored | batches | median s | p90 s | median WAL MB/batch |")
    print("| --- | ---: | ---: | ---: | ---: |")
    millions: dict[int, list[BatchFigure]] = {}
    for figure in figures:
        millions.setdefault(figure.rows_before // MILLION, []).append(figure)
    medians = {}
    for million, group in sorted(millions.items()):
        seconds = [f.seconds for f in group]
        medians[million] = float(np.median(seconds))
        sampled = [f.wal_bytes for f in group if f.wal_bytes >= 0]
        wal = float(np.median(sampled)) / 1e6 if sampled else float("nan")
        print(
            f"| {million}M-{million + 1}M | {len(group)} | {medians[million]:.3f} "
            f"| {np.percentile(seconds, 90):.3f} | {wal:.1f} |"
        )
    first, last = medians[min(medians)], medians[max(medians)]
    print(f"last million / first million (median batch time): {last / first:.2f}x")
    if len(medians) > 2:  # the issue's own protocol: a load onto a store of 1M rows
        print(f"last million / second million (median batch time): {last / medians[1]:.2f}x")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--database-url", help="a scratch database of a running server")
    where.add_argument(
        "--scratch-cluster",
        choices=("defaults", "compose"),
        help="a cluster of the bench's own, with PostgreSQL's or docker-compose.yml's settings",
    )
    parser.add_argument("--rows", type=int, default=10 * MILLION)
    parser.add_argument("--batch-rows", type=int, default=50_000)
    parser.add_argument("--ids", choices=(*ID_PATTERNS, "both"), default="random")
    parser.add_argument("--days", type=int, default=10, help="daily windows the load spans")
    parser.add_argument("--checkpoint-every-rows", type=int, help="force a CHECKPOINT this often")
    parser.add_argument(
        "--writer", choices=WRITERS, default="calmon", help="what writes each batch (above)"
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting for --scratch-cluster, over the chosen ones (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.database_url:
        measure(args.database_url, args)
        return
    settings = compose_settings() if args.scratch_cluster == "compose" else {}
    settings |= dict(setting.split("=", 1) for setting in args.setting)
    print(f"scratch cluster, settings: {settings or 'PostgreSQL defaults'}")
    with scratch_cluster(settings) as cluster:
        measure(cluster.url, args)


def measure(url: str, args: argparse.Namespace) -> None:
    upgrade(url)
    engine = create_db_engine(Settings(database_url=url, migrate_on_start=False))
    factory = create_session_factory(engine)
    patterns = ID_PATTERNS if args.ids == "both" else (args.ids,)
    try:
        for pattern in patterns:
            load = Load(
                args.rows,
                args.batch_rows,
                pattern,
                args.days,
                args.checkpoint_every_rows,
                args.writer,
            )
            started, checkpoints_before = time.perf_counter(), checkpoints(engine)
            figures = run(engine, factory, load)
            report(figures, pattern, load.writer)
            sizes = stored_sizes(engine)
            rows = len(figures) * load.size
            print(
                "stored: "
                + ", ".join(f"{name} {size / 1e6:,.0f} MB" for name, size in sizes.items())
                + f" ({sizes['keys indexes'] / rows:.0f} bytes of key indexes an id)"
            )
            print(
                f"({time.perf_counter() - started:.0f} s in all, "
                f"{checkpoints(engine) - checkpoints_before} checkpoints)"
            )
    finally:
        empty(engine)
        engine.dispose()


if __name__ == "__main__":
    main()
