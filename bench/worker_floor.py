"""The worker's fixed cost per window (issue 29): claim -> stored against a floor, same run.

1. One window of ``--rows`` rows (default 10^4) in ``--segments`` segments (default 4, so five
   parts with the whole window): claim -> stored (read, sketch, 1,000-replicate intervals,
   effects, the drop detector's judgement of every part, nowcasts, one commit) against the
   floor "one read of the window's score and label columns + one ``evaluate``".
2. ``--many-rows`` rows (default 10^5) in ``--many-segments`` segments (default 100): the same
   against "one read of score, label and segment + one ``evaluate`` per segment and one for the
   whole window" (101 ``evaluate`` calls).

Each run judges the window afresh (bench/worker.py's set-up: every part gets a frozen reference
ending before it, its own sketch and score counts standing in for the pooled ones, and the
verdicts are reset between runs), so every run pays the detector and the nowcasts. The paths
are interleaved; each timing is the median of ``--repeats`` runs. Only ratios are meaningful:
the machine is shared.

    python -m bench.worker_floor --database-url postgresql+psycopg://postgres@127.0.0.1:5432/x

Beside them, **the intervals alone**: the 1,000-replicate bootstrap (with its prior grid) of
every part's stored sketch and nothing else, interleaved in the same run. The worker cannot
cost less than that while its intervals stay what their coverage tables measured, so its ratio
to the floor is the bound of the worker's.

``--profile FILE`` also writes a cProfile of ``--profile-runs`` further claim -> stored runs of
the first workload (``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import cProfile
import sys
import time
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import psycopg
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import WindowMetrics
from app.db.repositories.window_rows import as_array, binary_array_cursor
from app.metrics import CurveSketch, bootstrap, evaluate
from app.metrics.prior_grid import DEFAULT_PRIOR_GRID
from app.windows.compute import ComputeOptions
from bench.worker import (
    FIRST,
    THRESHOLD,
    Timing,
    _claim_to_stored,
    _copy_floor,
    _freeze_references,
    _load,
    _redirty,
    _reset,
    _timed,
    _unjudge,
    scratch_database,
)

PI0 = 0.005


@dataclass(frozen=True)
class Workload:
    """One window to time: its rows and segments."""

    name: str
    rows: int
    segments: int
    evaluate_per_segment: bool
    """The floor evaluates every segment and the whole window (else the whole window once)."""


def _segments_floor(engine: Engine, model_id: int, window_start: datetime = FIRST) -> int:
    """One read of score, label and segment (binary arrays, one row per segment), then one
    ``evaluate`` per segment and one for the whole window; the number of ``evaluate`` calls."""
    with engine.connect() as connection:
        raw = connection.connection.driver_connection
        assert isinstance(raw, psycopg.Connection)
        with binary_array_cursor(raw) as cursor:
            cursor.execute(
                "SELECT segment, array_agg(score), array_agg(label) FROM predictions "
                "WHERE model_id = %s AND window_start = %s AND label IS NOT NULL "
                "GROUP BY segment",
                (model_id, window_start),
            )
            rows = cursor.fetchall()
    parts = [
        (
            as_array(scores, np.float64),
            as_array(labels, np.int8),
        )
        for _, scores, labels in rows
    ]
    for scores, labels in parts:
        evaluate(scores, labels, threshold=THRESHOLD, pi0=PI0)
    whole_scores = np.concatenate([p[0] for p in parts])
    whole_labels = np.concatenate([p[1] for p in parts])
    evaluate(whole_scores, whole_labels, threshold=THRESHOLD, pi0=PI0)
    return len(parts) + 1


def time_floor(engine: Engine, model_id: int, per_segment: bool) -> None:
    """Issue 29's floor for the model's first window: one read of its scores and labels and
    one ``evaluate`` (binary ``COPY``), or with ``per_segment`` its segments read too and an
    ``evaluate`` per segment and one for the whole window (:func:`_segments_floor`)."""
    if per_segment:
        _segments_floor(engine, model_id)
    else:
        _copy_floor(engine, model_id, FIRST, PI0)


def _judged_parts(factory: sessionmaker[Session], model_id: int) -> tuple[int, int]:
    """Parts of the window with a verdict issued, and parts with a nowcast."""
    with factory() as session:
        judged = session.scalar(
            select(func.count()).where(
                WindowMetrics.model_id == model_id, WindowMetrics.judged_at.is_not(None)
            )
        )
        estimated = session.scalar(
            select(func.count()).where(
                WindowMetrics.model_id == model_id,
                WindowMetrics.nowcast_reference_version.is_not(None),
            )
        )
    return int(judged or 0), int(estimated or 0)


def _part_sketches(factory: sessionmaker[Session], model_id: int) -> list[CurveSketch]:
    """Every part's stored sketch (after a claim): what the worker's intervals are drawn from."""
    with factory() as session:
        blobs = session.scalars(
            select(WindowMetrics.sketch).where(
                WindowMetrics.model_id == model_id, WindowMetrics.window_start == FIRST
            )
        ).all()
    return [CurveSketch.from_bytes(blob) for blob in blobs if blob is not None]


def _intervals_only(sketches: list[CurveSketch], replicates: int) -> None:
    """The worker's intervals and nothing else: each part's bootstrap at pi0 with the prior
    grid the worker draws for a later pi0 move (app/windows/evaluation.py)."""
    for seed, sketch in enumerate(sketches):
        bootstrap(sketch, pi0=PI0, seed=seed, replicates=replicates, grid=DEFAULT_PRIOR_GRID)


@dataclass(frozen=True)
class Measured:
    """One workload's timings."""

    workload: Workload
    floor: Timing
    worker: Timing
    worker_cpu: Timing
    """The worker's CPU seconds in this process (the database server's left out): steadier
    than the wall clock on a loaded machine, for comparing two versions of the worker."""
    evaluate_calls: int
    intervals: Timing
    """The intervals alone (every part's bootstrap): the bound of the worker's time."""


def bench_workload(
    engine: Engine,
    factory: sessionmaker[Session],
    workload: Workload,
    repeats: int,
    options: ComputeOptions,
) -> tuple[Measured, int]:
    """Load the window, give it references, then time the floor and the worker interleaved."""
    model_id = _load(
        factory, workload.name, 1, workload.rows, segments=workload.segments, pi0_fixed=PI0
    )
    _claim_to_stored(factory, options)  # the sketches and counts the references stand on
    _freeze_references(factory, model_id)
    floor, worker, worker_cpu, intervals = [], [], [], []
    calls = 0
    sketches = _part_sketches(factory, model_id)
    for _ in range(repeats):
        _unjudge(factory, model_id)
        _redirty(factory, model_id)
        floor.append(_timed(lambda: time_floor(engine, model_id, workload.evaluate_per_segment)))
        calls = workload.segments + 1 if workload.evaluate_per_segment else 1
        cpu = time.process_time()
        worker.append(_timed(lambda: _claim_to_stored(factory, options)))
        worker_cpu.append(time.process_time() - cpu)
        intervals.append(_timed(lambda: _intervals_only(sketches, options.replicates)))
    parts = workload.segments + 1 if workload.segments > 1 else 1
    judged, estimated = _judged_parts(factory, model_id)
    if judged != parts or estimated != parts:
        raise RuntimeError(f"{workload.name}: {judged} judged, {estimated} nowcast of {parts}")
    measured = Measured(
        workload, Timing(floor), Timing(worker), Timing(worker_cpu), calls, Timing(intervals)
    )
    return measured, model_id


def profile_workload(
    factory: sessionmaker[Session], model_id: int, runs: int, options: ComputeOptions, path: str
) -> None:
    """cProfile ``runs`` claim -> stored runs of the loaded window into ``path``."""
    profiler = cProfile.Profile()
    for _ in range(runs):
        _unjudge(factory, model_id)
        _redirty(factory, model_id)
        profiler.runcall(_claim_to_stored, factory, options)
    profiler.dump_stats(path)


def main(argv: list[str] | None = None) -> int:
    """Time both workloads and print the ratios to their floors."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--many-rows", type=int, default=100_000)
    parser.add_argument("--many-segments", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--profile", help="write a cProfile of the first workload here")
    parser.add_argument("--profile-runs", type=int, default=10)
    args = parser.parse_args(argv)
    engine, factory = scratch_database(parser, args.database_url, "the worker benchmark")
    options = ComputeOptions(replicates=args.replicates)
    workloads = [
        Workload("one-window", args.rows, args.segments, evaluate_per_segment=False),
        Workload("many-segments", args.many_rows, args.many_segments, evaluate_per_segment=True),
    ]
    results = []
    try:
        for workload in workloads:
            _reset(engine)
            measured, model_id = bench_workload(engine, factory, workload, args.repeats, options)
            results.append(measured)
            if args.profile and workload is workloads[0]:
                profile_workload(factory, model_id, args.profile_runs, options, args.profile)
        _reset(engine)
    finally:
        engine.dispose()
    print(f"{args.replicates} replicates, median of {args.repeats} interleaved runs")
    for m in results:
        w = m.workload
        print(f"{w.rows:,} rows in {w.segments} segments")
        print(f"  floor: one read + {m.evaluate_calls} evaluate   {m.floor}")
        print(f"  worker: claim -> stored              {m.worker}")
        print(f"  worker's CPU in this process         {m.worker_cpu}")
        print(f"  intervals alone, every part's bootstrap {m.intervals}")
        print(f"  ratio worker / floor: {m.worker.median / m.floor.median:.1f}")
        bound = m.intervals.median / m.floor.median
        print(f"  ratio intervals alone / floor: {bound:.1f} (the bound of the worker's ratio)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
