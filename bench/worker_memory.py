"""One very large window (issue 29: 10^7 rows): claim -> stored against the floor, with the
peak memory of each, every run in a fresh process.

    python -m bench.worker_memory --database-url postgresql+psycopg://postgres@127.0.0.1:5432/x \
        --rows 10000000

The window (one segment, labels complete, pi0 fixed) is generated inside PostgreSQL
(bench/worker.py's generator), computed once so that it has a reference to be judged against,
then each run forgets its verdict and marks it dirty again. A run is a child interpreter that
does one thing: the worker's claim -> stored, or the floor (one binary COPY of score and label
into numpy + one ``evaluate``). The child measures its own wall time and its peak resident set
(``VmHWM``, reset when the work starts) above what it held then (``VmRSS`` after its imports
and the engine), so the bytes per row are the work's own, not the interpreter's. The paths
alternate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.settings import Settings
from app.windows.compute import ComputeOptions
from bench.worker import (
    FIRST,
    _claim_to_stored,
    _copy_floor,
    _freeze_references,
    _load,
    _redirty,
    _reset,
    _unjudge,
)
from bench.worker_floor import PI0

MODEL = "one-large-window"


def _status_bytes(field: str) -> int:
    """A memory field of this process's /proc status (Linux): VmRSS now, VmHWM its peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(database_url: str, way: str, model_id: int, replicates: int) -> None:
    """One run in this fresh process; prints its seconds and memory as JSON."""
    engine = create_db_engine(Settings(database_url=database_url))
    factory = create_session_factory(engine)
    # The imports' own peak must not count: reset the high-water mark to the resident set now.
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_bytes("VmRSS")
    start = time.perf_counter()
    if way == "worker":
        _claim_to_stored(factory, ComputeOptions(replicates=replicates))
    else:
        _copy_floor(engine, model_id, FIRST, PI0)
    seconds = time.perf_counter() - start
    peak = _status_bytes("VmHWM")
    engine.dispose()
    print(json.dumps({"seconds": seconds, "before": before, "peak": peak}))


def _run_child(database_url: str, way: str, model_id: int, replicates: int) -> dict[str, float]:
    code = (
        "import sys; from bench.worker_memory import child; "
        "child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, database_url, way, str(model_id), str(replicates)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True, help="a scratch PostgreSQL database")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replicates", type=int, default=1000)
    args = parser.parse_args(argv)
    upgrade(args.database_url)
    engine = create_db_engine(Settings(database_url=args.database_url))
    factory = create_session_factory(engine)
    runs: dict[str, list[dict[str, float]]] = {"floor": [], "worker": []}
    try:
        _reset(engine)
        started = time.perf_counter()
        model_id = _load(factory, MODEL, 1, args.rows, segments=1, pi0_fixed=PI0)
        loaded = time.perf_counter() - started
        _claim_to_stored(factory, ComputeOptions(replicates=args.replicates))
        _freeze_references(factory, model_id)
        for _ in range(args.repeats):
            _unjudge(factory, model_id)
            _redirty(factory, model_id)
            for way in ("floor", "worker"):
                runs[way].append(_run_child(args.database_url, way, model_id, args.replicates))
        _reset(engine)
    finally:
        engine.dispose()
    print(f"one window of {args.rows:,} rows (loaded in {loaded:.0f} s), {args.repeats} runs each")
    print(f"  {'way':8} {'median s':>9} {'peak above start, MB':>21} {'bytes per row':>14}")
    medians = {}
    for way, measured in runs.items():
        medians[way] = statistics.median(r["seconds"] for r in measured)
        grown = max(r["peak"] - r["before"] for r in measured)
        print(f"  {way:8} {medians[way]:9.2f} {grown / 1e6:21.0f} {grown / args.rows:14.1f}")
    print(f"  ratio worker / floor: {medians['worker'] / medians['floor']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
