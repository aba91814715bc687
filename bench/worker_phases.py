"""Where a window's claim -> stored goes, phase by phase, with the alert budget alone and with
an amount and a card on every row (issue 24: what the two fields add, and where; issue 29: what
each phase costs against the floor).

bench/worker.py's one-window model (``--rows`` rows in ``--segments`` segments, default 4, each
segment judged against a frozen reference and nowcast, an alert budget of 1% of the rows) is
computed ``--repeats`` times with the fields off and on, alternating which goes first. Each
claim's wall time is cut into the phases of ``app.windows.compute.compute_claim`` by timers
around the functions it calls (the same calls, timed; nothing replaced), the rest (claiming,
locking, commits) being the claim's time outside them. Before each claim without the fields,
issue 29's floor on the same rows, as bench/worker_floor.py times it: one read of the window's
scores and labels and one ``evaluate`` (``--evaluate-per-segment``: its segments read too, and
an ``evaluate`` per segment and one for the whole, the floor of the 100-segment workload); each
phase of the claim without the fields is printed as a multiple of it. Then the worker's read
itself on the server: ``EXPLAIN ANALYZE`` of its query (app/db/repositories/window_rows.py)
with the fields set and unset, twice each (one backend: no parallel workers).

    python -m bench.worker_phases --database-url postgresql+psycopg://.../calmon_bench
    python -m bench.worker_phases --database-url ... --rows 100000 --segments 100 \
        --evaluate-per-segment --repeats 6

The database's calmon tables are emptied first (it must be a scratch database). Prints medians
in ms, one BLAS thread advised (``OPENBLAS_NUM_THREADS=1``: its second thread spins on the card
bootstrap's small products).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import psycopg
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.db.repositories import window_rows
from app.db.repositories.window_rows import WindowRowsRepository
from app.windows import compute
from app.windows.compute import ComputeOptions
from bench import worker as one_window
from bench import worker_floor

PHASES = (
    "window_inputs",
    "evaluate_segment",
    "settle_bins",
    "refresh_pi0",
    "load_references",
    "store_window",
    "run_early",
    "run_detector",
    "run_nowcasts",
)
"""The functions ``compute_claim`` calls by these names (its module's globals), timed."""
_READ = "read rows"
_FLOOR = "floor"
"""Issue 29's floor (:func:`bench.worker_floor.time_floor`)."""


@dataclass(frozen=True)
class Runs:
    """How many claims of each kind, the bootstrap's replicates, and which floor."""

    repeats: int
    replicates: int
    evaluate_per_segment: bool


def _timed(spent: dict[str, float], name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started

    return timed


def time_phases(
    factory: sessionmaker[Session], engine: Engine, model_id: int, rows: int, options: Runs
) -> dict[bool, dict[str, list[float]]]:
    """Seconds per phase and claim, fields off (False) and on (True); the timers are taken
    off again whatever happens."""
    spent: dict[str, float] = defaultdict(float)
    originals: dict[str, Any] = {name: getattr(compute, name) for name in PHASES}
    read = WindowRowsRepository.read
    runs: dict[bool, dict[str, list[float]]] = {False: defaultdict(list), True: defaultdict(list)}
    compute_options = ComputeOptions(replicates=options.replicates)
    floor = partial(worker_floor.time_floor, engine, model_id, options.evaluate_per_segment)
    cards = max(1, rows // 3)
    try:
        for name, call in originals.items():
            setattr(compute, name, _timed(spent, name, call))
        WindowRowsRepository.read = _timed(spent, _READ, read)  # type: ignore[method-assign]
        for repeat in range(options.repeats):
            for fields in (False, True) if repeat % 2 == 0 else (True, False):
                one_window._set_row_fields(engine, factory, model_id, on=fields, cards=cards)
                one_window._unjudge(factory, model_id)
                one_window._redirty(factory, model_id)
                if not fields:  # the floor on the same rows, beside the claims
                    runs[fields][_FLOOR].append(one_window._timed(floor))
                spent.clear()
                started = time.perf_counter()
                one_window._claim_to_stored(factory, compute_options)
                total = time.perf_counter() - started
                runs[fields]["claim"].append(total)
                for name in (_READ, *PHASES):
                    runs[fields][name].append(spent[name])
                runs[fields]["rest"].append(total - sum(spent.values()))
    finally:
        for name, call in originals.items():
            setattr(compute, name, call)
        WindowRowsRepository.read = read  # type: ignore[method-assign]
    return runs


def time_read(
    factory: sessionmaker[Session], engine: Engine, model_id: int, rows: int, reads: int
) -> dict[bool, list[float]]:
    """The server's milliseconds for the worker's read of the window, fields off (False) and
    on (True): twice each state (an UPDATE and a VACUUM apart), ``reads`` reads in all."""
    conninfo = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    params = {"model": model_id, "start": one_window.FIRST}
    out: dict[bool, list[float]] = {False: [], True: []}
    for fields in (False, True, False, True):  # each state twice, alternated
        one_window._set_row_fields(engine, factory, model_id, on=fields, cards=max(1, rows // 3))
        with psycopg.connect(conninfo) as connection:
            connection.execute("SET max_parallel_workers_per_gather = 0")
            for _ in range(max(1, reads // 4)):
                plan = connection.execute(
                    f"EXPLAIN (ANALYZE, FORMAT JSON) {window_rows._PG_QUERY}", params
                ).fetchone()
                assert plan is not None
                out[fields].append(float(plan[0][0]["Execution Time"]))
    return out


def main(argv: list[str] | None = None) -> int:
    """Load the window, time the phases and the read, print the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--evaluate-per-segment", action="store_true")
    parser.add_argument("--repeats", type=int, default=16)
    parser.add_argument("--replicates", type=int, default=1000)
    args = parser.parse_args(argv)
    engine, factory = one_window.scratch_database(parser, args.database_url, "the phases bench")
    try:
        one_window._reset(engine)
        model_id = one_window._load(
            factory, "phases", 1, args.rows, segments=args.segments, pi0_fixed=worker_floor.PI0
        )
        one_window._claim_to_stored(factory, ComputeOptions(replicates=args.replicates))
        one_window._freeze_references(factory, model_id)
        one_window._set_alert_capacity(factory, model_id, max(1, args.rows // 100))
        runs = Runs(args.repeats, args.replicates, args.evaluate_per_segment)
        phases = time_phases(factory, engine, model_id, args.rows, runs)
        read = time_read(factory, engine, model_id, args.rows, args.repeats)
        one_window._reset(engine)
    finally:
        engine.dispose()
    print(
        f"one window, {args.rows:,} rows in {args.segments} segments, "
        f"{args.replicates} replicates, {args.repeats} claims each, median ms"
    )
    floor = statistics.median(phases[False][_FLOOR]) * 1000
    print(
        f"  {'phase':18} {'budget alone':>13} {'with fields':>12} {'added':>8} {'alone/floor':>12}"
    )
    for name in ("claim", _READ, *PHASES, "rest"):
        off, on = (statistics.median(phases[f][name]) * 1000 for f in (False, True))
        print(f"  {name:18} {off:13.1f} {on:12.1f} {on - off:+8.1f} {off / floor:11.2f}x")
    off, on = (statistics.median(read[f]) for f in (False, True))
    print(f"  the worker's read on the server (EXPLAIN ANALYZE): {off:.1f} -> {on:.1f} ms")
    what = "an evaluate a segment and one" if args.evaluate_per_segment else "one evaluate"
    print(f"  the floor, one read and {what}: {floor:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
