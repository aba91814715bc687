"""The peers' job (issue 29): 30 daily windows, 10^6 labelled rows, 5 segments, in one run.

Times three ways of doing it, interleaved round by round:

- **calmon**: the worker drains the 30 windows claim -> stored (every metric regular and
  calibrated with 1,000-replicate intervals, effects, pi0 and the reference anchored from the
  history, the drop detector, nowcasts; the whole window and each segment);
- **the floor**: per window one read of score, label and segment + one ``evaluate`` per segment
  and one for the whole window (bench/worker_floor.py's floor, 30 times);
- **NannyML** (bench/peers/realized_nannyml.py, in its own virtualenv): realized performance per
  day, one ``PerformanceCalculator`` per segment and one for the whole stream, fitted on the first
  ``--reference-days`` days; ``calculate`` alone, and ``fit`` + ``calculate``.

    python -m bench.peers_job --database-url postgresql+psycopg://postgres@127.0.0.1:5432/x \
        --nannyml-python /work/nannyml-venv/bin/python

The rows are generated inside PostgreSQL (bench/worker.py's generator, seeded) and reloaded
before each calmon round (untimed), so each round drains the same fresh stream. The NannyML
peer reads the same rows, exported once. Only ratios are meaningful: the machine is shared.
Without ``--nannyml-python`` (or ``CALMON_NANNYML_PYTHON``) the peer is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.settings import Settings
from app.windows.compute import ComputeOptions
from bench.worker import FIRST, THRESHOLD, _drain, _load, _reset
from bench.worker_floor import _segments_floor

PEER = Path(__file__).parent / "peers" / "realized_nannyml.py"
MODEL = "peers-job"


@dataclass(frozen=True)
class Job:
    """The job's shape."""

    windows: int = 30
    rows: int = 1_000_000
    segments: int = 5
    reference_days: int = 7


@dataclass
class Timings:
    """Seconds per round of each way."""

    calmon: list[float]
    floor: list[float]
    nannyml_calculate: list[float]
    nannyml_fit_calculate: list[float]


def _fresh_stream(factory: sessionmaker[Session], engine: Engine, job: Job) -> int:
    _reset(engine)
    per_window = job.rows // job.windows
    return _load(factory, MODEL, job.windows, per_window, segments=job.segments, pi0_fixed=None)


def _floor(engine: Engine, model_id: int, job: Job) -> int:
    return sum(
        _segments_floor(engine, model_id, FIRST + timedelta(days=day)) for day in range(job.windows)
    )


def _export(engine: Engine, model_id: int, job: Job, path: Path) -> None:
    """The stream's rows for the peer: score, label, day index, segment code."""
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT score, label, window_start, segment FROM predictions "
                "WHERE model_id = :model AND label IS NOT NULL"
            ),
            {"model": model_id},
        ).all()
    day = np.array([(r.window_start - FIRST) // timedelta(days=1) for r in rows], dtype=np.int64)
    segments = sorted({r.segment for r in rows})
    np.savez(
        path,
        score=np.array([r.score for r in rows], dtype=np.float64),
        label=np.array([r.label for r in rows], dtype=np.int64),
        day=day,
        segment=np.array([segments.index(r.segment) for r in rows], dtype=np.int64),
        reference_days=job.reference_days,
        threshold=THRESHOLD,
    )


def _peer(python: str, rows: Path, folder: Path) -> dict[str, Any]:
    """One round of the peer, in its own interpreter (its import not timed)."""
    out = folder / "peer.json"
    subprocess.run([python, str(PEER), str(rows), str(out), "1"], check=True)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def run(
    database_url: str, job: Job, rounds: int, nannyml_python: str | None, replicates: int = 1000
) -> tuple[Timings, dict[str, Any]]:
    """``rounds`` rounds of the three ways; their timings and the peer's versions."""
    upgrade(database_url)
    engine = create_db_engine(Settings(database_url=database_url))
    factory = create_session_factory(engine)
    options = ComputeOptions(replicates=replicates)
    timings = Timings([], [], [], [])
    versions: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            rows = Path(folder) / "rows.npz"
            for round_number in range(rounds):
                model_id = _fresh_stream(factory, engine, job)
                if round_number == 0 and nannyml_python:
                    _export(engine, model_id, job, rows)
                start = time.perf_counter()
                _floor(engine, model_id, job)
                timings.floor.append(time.perf_counter() - start)
                start = time.perf_counter()
                drained = _drain(factory, options)
                timings.calmon.append(time.perf_counter() - start)
                if drained != job.windows:
                    raise RuntimeError(f"the worker drained {drained} windows of {job.windows}")
                if nannyml_python:
                    peer = _peer(nannyml_python, rows, Path(folder))
                    fit, calculate = peer.pop("fit")[0], peer.pop("calculate")[0]
                    timings.nannyml_calculate.append(calculate)
                    timings.nannyml_fit_calculate.append(fit + calculate)
                    versions = peer
        _reset(engine)
    finally:
        engine.dispose()
    return timings, versions


def _median(runs: list[float]) -> float:
    return statistics.median(runs)


def report(timings: Timings, versions: dict[str, Any], job: Job) -> None:
    """The table: each way's median seconds and its ratio to calmon's."""
    print(
        f"the peers' job: {job.windows} daily windows, {job.rows:,} rows, {job.segments} "
        f"segments (+ the whole stream); median of {len(timings.calmon)} interleaved rounds"
    )
    calmon = _median(timings.calmon)
    lines = [
        ("calmon worker, claim -> stored", timings.calmon),
        ("floor: read + evaluate per part", timings.floor),
        ("NannyML calculate", timings.nannyml_calculate),
        ("NannyML fit + calculate", timings.nannyml_fit_calculate),
    ]
    print(f"  {'way':34} {'seconds':>8} {'calmon / this':>14}")
    for name, runs in lines:
        if runs:
            print(f"  {name:34} {_median(runs):8.2f} {calmon / _median(runs):14.2f}")
    if versions:
        shown = ", ".join(f"{k} {versions[k]}" for k in ("nannyml", "numpy", "pandas"))
        print(f"  peer: {shown}; {versions['parts']} parts, {versions['chunks']} daily chunks")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", required=True, help="a scratch PostgreSQL database")
    parser.add_argument("--rows", type=int, default=Job.rows)
    parser.add_argument("--windows", type=int, default=Job.windows)
    parser.add_argument("--segments", type=int, default=Job.segments)
    parser.add_argument("--reference-days", type=int, default=Job.reference_days)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument(
        "--nannyml-python",
        default=os.environ.get("CALMON_NANNYML_PYTHON"),
        help="python of a virtualenv with nannyml (default: $CALMON_NANNYML_PYTHON; else skipped)",
    )
    args = parser.parse_args(argv)
    job = Job(args.windows, args.rows, args.segments, args.reference_days)
    timings, versions = run(
        args.database_url, job, args.rounds, args.nannyml_python, args.replicates
    )
    report(timings, versions, job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
