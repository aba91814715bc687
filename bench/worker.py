"""Worker speed on PostgreSQL, as ratios against floors measured in the same run.

1. One window of 10^6 rows (4 segments): claim -> stored metrics (every segment, 1,000-replicate
   intervals, effects against each segment's frozen reference, the drop detector's judgement of
   every segment, one commit) against the floor "binary COPY of the window's score and label
   columns into numpy + one ``evaluate``". Each run judges the window afresh (its verdicts are
   reset between runs: a verdict is otherwise issued once and kept). The COPY is read the
   fastest way psycopg allows (raw COPY OUT chunks parsed by numpy, no per-row Python objects).
   The worker's own transfer (one binary array per column) is timed alone too, to show where
   the time goes, and so are the two parts of the nowcast: counting the window's scores on the
   model's bins (the per-window summary), and the nowcast of every segment against its reference
   (the window's own score counts and sketch stand in for the reference's). The same window
   with an alert budget, then with an amount and an entity on every row: the fields' cost over
   the budget's alone, against the least any design pays for them (the read's two more columns,
   and one numbering of the window's entity codes, as the worker numbers them).
2. A series of W windows of R rows (default 365 x 50,000): after a pi0 move by 20%, the series
   is recomputed the way the worker does it (point values from the stored sketches in one batch,
   intervals moved along each window's stored prior grid, effects against the references taken
   again, verdicts kept, one commit) against recomputing every window from its raw rows
   (re-dirty and drain: read, sort, evaluate, bootstrap, store). Both store the same rows;
   each run alternates the two.

    python -m bench.worker --database-url postgresql+psycopg://postgres@127.0.0.1:5432/calmon_bench

The database's calmon tables are emptied first (it must be a scratch database). Rows are
generated inside PostgreSQL (Box-Muller on random(), seeded): loading the series' 18M rows takes
about two minutes. Each timing is the median of ``--repeats`` (``--series-repeats``) runs, the
paths interleaved.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import Engine, String, cast, delete, func, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import create_db_engine, create_session_factory
from app.db.metrics_tables import AlertStateRow, Pi0Version, SegmentReference, WindowMetrics
from app.db.migrate import upgrade
from app.db.partitions import ensure_partitions, week_starts
from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.nowcast import NowcastRepository
from app.db.repositories.pi0 import Pi0Repository
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.repositories.window_rows import (
    SegmentRows,
    WindowRowsRepository,
    as_array,
    binary_array_cursor,
)
from app.db.tables import MonitoredModel, Window
from app.db.types import utcnow
from app.metrics import ClassHistogram, CurveSketch, ScoreHistogram, evaluate, nowcast_window
from app.metrics.sketch_build import number_entities
from app.metrics.types import Float64Array, Int64Array
from app.monitoring.vocabulary import SEGMENT_ALL
from app.settings import Settings
from app.windows.compute import ComputeOptions, compute_claim
from app.windows.judging import load_references
from app.windows.model_pass import ModelPass
from app.windows.rows import whole_window
from app.windows.scores import counted_parts, flagged, stored_edges
from app.windows.series import SeriesPass, recompute_series
from bench.ingest import pooled_share

FIRST = datetime(2025, 1, 1, tzinfo=UTC)
THRESHOLD = 1.5
PI = 0.005
OWNER = "bench"

_GENERATE = """
INSERT INTO predictions (model_id, prediction_id, window_start, ts, score, label, segment)
SELECT :model, 'p' || w || '-' || g, :first + w * interval '1 day', :first + w * interval '1 day',
       sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) + 2.0 * lab, lab,
       CASE WHEN :segments > 1 THEN 's' || (g % :segments) ELSE 'all' END
FROM generate_series(0, :windows - 1) AS w,
     -- The WHERE refers to the outer row: without it PostgreSQL evaluates the subquery once
     -- and gives every window the same labels.
     LATERAL (
       SELECT g, (random() < :pi)::int AS lab FROM generate_series(1, :rows) AS g WHERE w >= 0
     ) AS t
"""


@dataclass(frozen=True)
class Timing:
    """Median and spread of repeated timings."""

    runs: list[float]

    @property
    def median(self) -> float:
        """Median seconds."""
        return statistics.median(self.runs)

    def __str__(self) -> str:
        return f"{self.median:8.3f} s (min {min(self.runs):.3f}, max {max(self.runs):.3f})"


def fields_ratio(budgeted: Timing, valued: Timing) -> tuple[float, float, float]:
    """The window's time with amounts and cards over its time with the budget alone (totals
    over the repeats), and a 95% interval: a paired bootstrap of the repeats, each of which
    ran both (bench.ingest's :func:`pooled_share`, inverted). It holds the noise between one
    run's repeats; runs of the same code differ by more (0.1-0.2 at 10^4 rows): the machine's
    moments between runs are not in it, so compare codes over several runs."""
    share, low, high = pooled_share([(budgeted.runs, valued.runs)])
    return 1.0 / share, 1.0 / high, 1.0 / low


def scratch_database(
    parser: argparse.ArgumentParser, database_url: str, bench: str
) -> tuple[Engine, sessionmaker[Session]]:
    """The worker benches' scratch database, migrated: its engine and sessions (a usage error
    naming ``bench`` on SQLite: the worker's read and its floors are PostgreSQL's)."""
    settings = Settings(database_url=database_url)
    if settings.is_sqlite:
        parser.error(f"{bench} measures PostgreSQL")
    upgrade(database_url)
    engine = create_db_engine(settings)
    return engine, create_session_factory(engine)


def _reset(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            text(
                "TRUNCATE window_metric_values, window_metrics, pi0_versions, worker_heartbeats, "
                "windows, predictions, prediction_keys, batches, models RESTART IDENTITY CASCADE"
            )
        )


def _load(
    factory: sessionmaker[Session],
    name: str,
    windows: int,
    rows: int,
    *,
    segments: int,
    pi0_fixed: float | None,
) -> int:
    """A model with ``windows`` dirty windows of ``rows`` generated rows each; its id."""
    with factory.begin() as session:
        model = MonitoredModel(
            name=name,
            threshold=THRESHOLD,
            granularity="day",
            timezone="UTC",
            pi0_policy="fixed" if pi0_fixed else "historical",
            pi0_fixed=pi0_fixed,
            min_label_coverage=0.8,
        )
        session.add(model)
        session.flush()
        model_id = model.id
        session.execute(text("SELECT setseed(0.42)"))
        params = {
            "model": model_id,
            "first": FIRST,
            "windows": windows,
            "rows": rows,
            "pi": PI,
            "segments": segments,
        }
        first = (FIRST - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
        days = first + np.arange(windows, dtype=np.int64) * 86_400_000_000
        ensure_partitions(session.connection(), model_id, week_starts(days))  # migration 0011
        session.execute(text(_GENERATE), params)
        store_keys_of_rows(session, params)
        for w in range(windows):
            session.add(
                Window(model_id=model_id, window_start=FIRST + timedelta(w), dirty_version=1)
            )
    with factory().connection() as connection:
        connection.execute(text("ANALYZE predictions"))
        connection.commit()
    return model_id


def _freeze_references(factory: sessionmaker[Session], model_id: int) -> None:
    """Give every segment of the (computed) window a frozen reference that ends before it, so
    that each computation of the window also judges it (the window's own sketch stands in for
    the pooled reference: same size, same cost)."""
    with factory.begin() as session:
        model = session.get(MonitoredModel, model_id)
        assert model is not None
        monitoring = MonitoringRepository(session)
        spec = monitoring.current_spec(model_id) or monitoring.add_spec(model_id, "automatic")
        for row in WindowMetricsRepository(session).series(model_id):
            assert row.sketch is not None
            monitoring.add_segment_reference(
                SegmentReference(
                    model_id=model_id,
                    segment=row.segment,
                    version=spec.version,
                    first_window=FIRST - timedelta(days=28),
                    last_window=FIRST - timedelta(days=1),
                    windows=14,
                    labelled=row.labelled,
                    positives=row.positives,
                    sketch=row.sketch,
                    score_counts=_labelled_counts(session, model_id, row.segment),
                    frozen_at=utcnow(),
                )
            )


def _labelled_counts(session: Session, model_id: int, segment: str) -> bytes:
    """The window's own score counts stand in for the reference's pooled ones (as its sketch
    does), so every timed run also nowcasts every segment."""
    counts = session.scalar(
        select(WindowMetrics.score_counts).where(
            WindowMetrics.model_id == model_id, WindowMetrics.segment == segment
        )
    )
    assert counts is not None, "the window's scores were not counted"
    return counts


def _unjudge(factory: sessionmaker[Session], model_id: int) -> None:
    """Forget the window's verdicts and the alert states, so the next run judges it again."""
    with factory.begin() as session:
        session.execute(
            update(WindowMetrics)
            .where(WindowMetrics.model_id == model_id)
            .values(
                judged_at=None,
                evidence=None,
                reference_version=None,
                nowcast=None,
                nowcast_reference_version=None,
            )
        )
        session.execute(delete(AlertStateRow).where(AlertStateRow.model_id == model_id))


def _redirty(factory: sessionmaker[Session], model_id: int) -> None:
    with factory.begin() as session:
        session.execute(
            update(Window)
            .where(Window.model_id == model_id)
            .values(dirty_version=Window.dirty_version + 1)
        )


def _copy_floor(engine: Engine, model_id: int, start: datetime, pi0: float) -> None:
    """Binary COPY of score and label into numpy, then one evaluate (the floor)."""
    with engine.connect() as connection:
        raw = connection.connection.driver_connection
        assert isinstance(raw, psycopg.Connection)
        buffer = bytearray()
        query = (
            "COPY (SELECT score, label FROM predictions WHERE model_id = %s "
            "AND window_start = %s AND label IS NOT NULL) TO STDOUT (FORMAT BINARY)"
        )
        with raw.cursor() as cursor, cursor.copy(query, (model_id, start)) as copy:
            for chunk in copy:
                buffer += chunk
        header = 19 + int.from_bytes(buffer[15:19], "big")
        record = np.dtype(
            [("fields", ">i2"), ("l1", ">i4"), ("score", ">f8"), ("l2", ">i4"), ("label", ">i2")]
        )
        rows = np.frombuffer(
            buffer, dtype=record, offset=header, count=(len(buffer) - header - 2) // 20
        )
        scores, labels = rows["score"].astype(np.float64), rows["label"].astype(np.int8)
    evaluate(scores, labels, threshold=THRESHOLD, pi0=pi0)


def _array_floor(factory: sessionmaker[Session], model_id: int, pi0: float) -> None:
    """Score and label as one binary array each (the worker's transfer), then one evaluate."""
    with factory.begin() as session:
        raw = session.connection().connection.driver_connection
        assert isinstance(raw, psycopg.Connection)
        with binary_array_cursor(raw) as cursor:
            cursor.execute(
                "SELECT array_agg(score), array_agg(label) FROM predictions "
                "WHERE model_id = %s AND window_start = %s AND label IS NOT NULL",
                (model_id, FIRST),
            )
            row = cursor.fetchone()
    assert row is not None
    scores = as_array(row[0], np.float64)
    labels = as_array(row[1], np.int8)
    evaluate(scores, labels, threshold=THRESHOLD, pi0=pi0)


def _transfer_only(factory: sessionmaker[Session], model_id: int, start: datetime) -> None:
    with factory.begin() as session:
        WindowRowsRepository(session).read(model_id, start)


@dataclass(frozen=True)
class WindowParts:
    """The window's rows as the worker reads them, and what its nowcast pass reads back."""

    segments: list[SegmentRows]
    edges: Float64Array
    estimates: list[tuple[Int64Array, int, ClassHistogram, CurveSketch]]


def _window_parts(factory: sessionmaker[Session], model_id: int) -> WindowParts:
    with factory() as session:
        edges = stored_edges(NowcastRepository(session), model_id)
        assert edges is not None, "the window did not cut the model's bins"
        segments = WindowRowsRepository(session).read(model_id, FIRST)
        estimates = []
        for row in WindowMetricsRepository(session).series(model_id):
            stored = session.get(WindowMetrics, (model_id, row.window_start, row.segment))
            assert stored is not None
            assert stored.score_counts is not None
            assert stored.flagged is not None
            assert row.sketch is not None
            counts = ScoreHistogram.from_bytes(stored.score_counts)
            estimates.append(
                (
                    counts.rows,
                    stored.flagged,
                    counts.classes(edges),
                    CurveSketch.from_bytes(row.sketch),
                )
            )
    return WindowParts(segments, edges, estimates)


def _summary_only(window: WindowParts) -> None:
    """What the nowcast adds to reading a window: its scores counted on the bins, per part."""
    counted_parts(window.segments, window.edges)
    for part in window.segments:  # the worker counts the whole window too: as cheap
        flagged(part, THRESHOLD)


def _nowcast_only(window: WindowParts) -> None:
    """The nowcast of every segment against its reference (the worker's nowcast pass)."""
    for counts, flagged_rows, reference, sketch in window.estimates:
        nowcast_window(counts, flagged_rows, reference, sketch, seed=1)


def _claim_to_stored(factory: sessionmaker[Session], options: ComputeOptions) -> None:
    with factory.begin() as session:
        claim = WindowQueueRepository(session).claim_next(OWNER, timedelta(minutes=10), utcnow())
    assert claim is not None
    compute_claim(factory, claim, OWNER, options)


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def bench_one_window(
    engine: Engine, factory: sessionmaker[Session], rows: int, repeats: int, replicates: int
) -> dict[str, Timing]:
    """Part 1: claim -> stored against the COPY + evaluate floor."""
    pi0 = 0.005
    model_id = _load(factory, "one-window", 1, rows, segments=4, pi0_fixed=pi0)
    options = ComputeOptions(replicates=replicates)
    _claim_to_stored(factory, options)  # sketches for the references
    _freeze_references(factory, model_id)
    window = _window_parts(factory, model_id)
    floor, array, transfer, worker, summary, nowcasts = [], [], [], [], [], []
    budgeted, valued, valued_transfer, grouping = [], [], [], []
    for _ in range(repeats):
        _unjudge(factory, model_id)
        _redirty(factory, model_id)
        floor.append(_timed(lambda: _copy_floor(engine, model_id, FIRST, pi0)))
        array.append(_timed(lambda: _array_floor(factory, model_id, pi0)))
        transfer.append(_timed(lambda: _transfer_only(factory, model_id, FIRST)))
        summary.append(_timed(lambda: _summary_only(window)))
        nowcasts.append(_timed(lambda: _nowcast_only(window)))
        worker.append(_timed(lambda: _claim_to_stored(factory, options)))
        # The same window with an alert budget (1% of its rows): the top-k metrics' cost.
        _set_alert_capacity(factory, model_id, max(1, rows // 100))
        _unjudge(factory, model_id)
        _redirty(factory, model_id)
        budgeted.append(_timed(lambda: _claim_to_stored(factory, options)))
        # The same window with an amount and an entity on every row, a review cost and the
        # alert budget: the value metrics' and card precision's cost over the budget's alone.
        _set_row_fields(engine, factory, model_id, on=True, cards=max(1, rows // 3))
        _unjudge(factory, model_id)
        _redirty(factory, model_id)
        valued.append(_timed(lambda: _claim_to_stored(factory, options)))
        # What no design with the same guarantees avoids: reading the two columns, and
        # grouping the window's rows by card once (each segment's groups follow from it in
        # linear time), the fastest way known here: the worker's own numbering (one sort of
        # packed keys; an argsort of the codes took 1.3-2x as long).
        valued_transfer.append(_timed(lambda: _transfer_only(factory, model_id, FIRST)))
        codes = _window_codes(factory, model_id)
        grouping.append(_timed(partial(number_entities, codes)))
        _set_row_fields(engine, factory, model_id, on=False)
        _set_alert_capacity(factory, model_id, None)
    _check_judged(factory, model_id)
    return {
        "floor": Timing(floor),
        "array": Timing(array),
        "transfer": Timing(transfer),
        "worker": Timing(worker),
        "budgeted": Timing(budgeted),
        "valued": Timing(valued),
        "valued_transfer": Timing(valued_transfer),
        "grouping": Timing(grouping),
        "summary": Timing(summary),
        "nowcast": Timing(nowcasts),
    }


def _window_codes(factory: sessionmaker[Session], model_id: int) -> Int64Array:
    """The entity codes of the whole window's rows, as the worker groups them."""
    with factory.begin() as session:
        segments = WindowRowsRepository(session).read(model_id, FIRST)
    return whole_window(segments, SEGMENT_ALL).entities


def _set_alert_capacity(
    factory: sessionmaker[Session], model_id: int, capacity: int | None
) -> None:
    with factory.begin() as session:
        model = session.get(MonitoredModel, model_id)
        assert model is not None
        model.alert_capacity = capacity


def _set_row_fields(
    engine: Engine, factory: sessionmaker[Session], model_id: int, *, on: bool, cards: int = 1
) -> None:
    """Every row of the model an amount (lognormal, as transaction values are) and an entity
    (a card of about three transactions), and the model a review cost, or none of them; then
    VACUUM, so that the rows read next are not read among the dead
    versions the UPDATE left (which would charge the amounts for the bench's own UPDATE)."""
    with factory.begin() as session:
        session.execute(
            text(
                "UPDATE predictions SET amount = CASE WHEN :on "
                "THEN round(exp(3 + 1.2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))"
                "::numeric, 2)::float8 END, entity = CASE WHEN :on "
                "THEN 'card-' || floor(random() * :cards)::bigint END WHERE model_id = :model"
            ),
            {"on": on, "model": model_id, "cards": cards},
        )
        model = session.get(MonitoredModel, model_id)
        assert model is not None
        model.review_cost = 2.0 if on else None
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE predictions"))


def _storage(factory: sessionmaker[Session]) -> tuple[int, int, int]:
    """Bytes a window segment stores at most: score counts, nowcast JSON, sketch."""
    with factory() as session:
        counts, estimate, sketch = session.execute(
            select(
                func.max(func.length(WindowMetrics.score_counts)),
                func.max(func.length(cast(WindowMetrics.nowcast, String))),
                func.max(func.length(WindowMetrics.sketch)),
            )
        ).one()
    return int(counts), int(estimate), int(sketch)


def _check_judged(factory: sessionmaker[Session], model_id: int) -> None:
    """The timed runs did judge and nowcast: every segment of the window carries a verdict
    and a nowcast."""
    with factory() as session:
        verdicts = WindowMetricsRepository(session).verdicts(model_id, FIRST)
        estimated = session.scalar(
            select(func.count()).where(
                WindowMetrics.model_id == model_id,
                WindowMetrics.nowcast_reference_version.is_not(None),
            )
        )
    if len(verdicts) != 5 or estimated != 5:
        raise RuntimeError(
            f"expected 5 judged and nowcast segments, found {sorted(verdicts)} and {estimated}"
        )


def _drain(factory: sessionmaker[Session], options: ComputeOptions) -> int:
    done = 0
    while True:
        with factory.begin() as session:
            claim = WindowQueueRepository(session).claim_next(
                OWNER, timedelta(minutes=10), utcnow()
            )
        if claim is None:
            return done
        compute_claim(factory, claim, OWNER, options)
        done += 1


def _sketch_recompute(factory: sessionmaker[Session], model_id: int, replicates: int) -> int:
    """Move pi0 by 20% (a new version) and recompute the series from sketches, one commit."""
    with factory.begin() as session:
        model = session.get(MonitoredModel, model_id)
        assert model is not None
        repo = WindowMetricsRepository(session)
        pi0 = Pi0Repository(session)
        current = pi0.current(model_id)
        assert current is not None
        version = pi0.add(
            Pi0Version(
                model_id=model_id,
                version=current.version + 1,
                value=current.value * 1.2,
                policy=current.policy,
                windows_used=current.windows_used,
                rows_used=current.rows_used,
                positives_used=current.positives_used,
                computed_at=utcnow(),
            )
        )
        references = load_references(MonitoringRepository(session), model, version.value)
        now = ModelPass.of(model, WindowQueueRepository(session))
        at = SeriesPass(now, version, references, replicates)
        return recompute_series(repo, at, None)


def bench_series(
    factory: sessionmaker[Session],
    windows: int,
    rows: int,
    repeats: int,
    replicates: int,
) -> dict[str, Timing]:
    """Part 2: recomputing the series from sketches against from raw rows."""
    model_id = _load(factory, "series", windows, rows, segments=1, pi0_fixed=None)
    options = ComputeOptions(replicates=replicates)
    _drain(factory, options)  # the stored series the recomputations start from
    raw, sketch = [], []
    for _ in range(repeats):
        _redirty(factory, model_id)
        raw.append(_timed(lambda: _drain(factory, options)))
        sketch.append(_timed(lambda: _sketch_recompute(factory, model_id, replicates)))
    return {"raw": Timing(raw), "sketch": Timing(sketch)}


def main(argv: list[str] | None = None) -> int:
    """Run both parts and print the timings and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--window-rows", type=int, default=1_000_000)
    parser.add_argument("--series-windows", type=int, default=365)
    parser.add_argument("--series-rows", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3, help="runs of the one-window part")
    parser.add_argument("--series-repeats", type=int, default=3, help="runs of the series part")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--skip-series", action="store_true", help="only the one-window part")
    args = parser.parse_args(argv)
    engine, factory = scratch_database(parser, args.database_url, "the worker benchmark")
    try:
        _reset(engine)
        one = bench_one_window(engine, factory, args.window_rows, args.repeats, args.replicates)
        storage = _storage(factory)
        _reset(engine)
        series = None
        if not args.skip_series:
            series = bench_series(
                factory, args.series_windows, args.series_rows, args.series_repeats, args.replicates
            )
            _reset(engine)
    finally:
        engine.dispose()
    worker = one["worker"].median
    print(f"one window, {args.window_rows:,} rows, 4 segments, {args.replicates} replicates")
    print(f"  floor: binary COPY score+label -> numpy + evaluate    {one['floor']}")
    print(f"  floor': binary arrays score+label -> numpy + evaluate {one['array']}")
    print(f"  worker transfer alone (binary arrays, 4 segments)    {one['transfer']}")
    print(f"  worker: claim -> stored metrics                      {one['worker']}")
    print(f"  ratio worker / floor: {worker / one['floor'].median:.2f} (target <= 2)")
    print(f"  ratio worker / floor': {worker / one['array'].median:.2f}")
    print(f"  worker with alert_capacity 1% of the rows            {one['budgeted']}")
    print(f"  ratio with / without alert_capacity: {one['budgeted'].median / worker:.2f}")
    print(f"  worker with amount and entity on every row, cost, budget {one['valued']}")
    fields = one["valued"].median / one["budgeted"].median
    print(f"  ratio with / without amount and entity: {fields:.2f} (target <= 1.15)")
    total, low, high = fields_ratio(one["budgeted"], one["valued"])
    print(f"  same, total time over the repeats: {total:.2f} (95% interval {low:.2f}-{high:.2f})")
    print(f"  worker transfer alone with amount and entity          {one['valued_transfer']}")
    print(f"  one numbering of the window's entity codes           {one['grouping']}")
    least = one["valued_transfer"].median - one["transfer"].median + one["grouping"].median
    share = least / one["budgeted"].median
    print(f"  the least the two fields add (read + one grouping): {least:.3f} s ({share:.1%})")
    print(f"  of which: score counts on the bins (5 parts)         {one['summary']}")
    print(f"  of which: nowcast of every segment (5)               {one['nowcast']}")
    print(f"  ratio score counts / worker: {one['summary'].median / worker:.2%} (target <= 10%)")
    print(f"  ratio nowcasts / worker: {one['nowcast'].median / worker:.2%}")
    counts, estimate, sketch = storage
    print(
        f"  stored per window segment: score counts {counts:,} B, nowcast {estimate:,} B "
        f"(sketch {sketch:,} B)"
    )
    if series is not None:
        print(f"series, {args.series_windows} windows x {args.series_rows:,} rows (segment all)")
        print(f"  recompute from raw rows (re-dirty + drain)           {series['raw']}")
        print(f"  recompute from sketches after a pi0 move             {series['sketch']}")
        ratio = series["sketch"].median / series["raw"].median
        print(f"  ratio sketches / raw rows: {ratio:.2%} (target <= 1%)")
    return 0


def store_keys_of_rows(session: Session, params: dict[str, Any]) -> None:
    """The ids' keys of rows generated straight into predictions (migration 0011: the keys
    table holds each id's uniqueness and week), as the ingest writes them."""
    session.execute(
        text(
            "INSERT INTO prediction_keys (model_id, prediction_id, window_start) "
            "SELECT model_id, prediction_id, window_start FROM predictions "
            "WHERE model_id = :model"
        ),
        params,
    )


if __name__ == "__main__":
    sys.exit(main())
