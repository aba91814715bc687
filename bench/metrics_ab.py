"""The worker's two largest computations, an older commit's against this checkout's, paired in
one process: the only comparison this shared machine's noise leaves readable.

Between two runs of bench/worker.py the same code moves by 10-20% (the machine's other tenants,
its clock); within one process, calls of the old and the new code alternated on the same inputs
see the same moments. This copies ``app/`` at ``--old`` (``git archive``) into a temporary
package ``calmon_old`` (its imports rewritten), builds one window of ``--rows`` rows in
``--segments`` segments (about 0.5% frauds; every row an amount and one of ``rows / 3`` cards;
an alert budget of 1% of each part's rows) with each version, and times, alternating which goes
first, the parts' 1,000-replicate bootstraps with their prior grid (the alert budget alone, and
with amounts, cards and a review cost), the parts' sketches as the worker builds them from its
read (the window's cards, as 64-bit hashes, numbered once; with and without amounts and cards),
their nowcasts against a 280,000-row reference and the drop detector's null draws from that
reference:

    python -m bench.metrics_ab --old 0974a29 --rows 10000 --segments 4 --iterations 31

CPU time of this process; with ``OPENBLAS_NUM_THREADS=1`` it leaves out the BLAS thread that
spins on the card bootstrap's small products. Prints each version's median and the median of
the paired ratios (new / old) with their quartiles. No database: the read, the store, the
detector and the database steps are bench/worker.py's and bench/worker_floor.py's.
"""

from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from tests.support.server import REPO_ROOT

OLD = "calmon_old"
_IMPORT = re.compile(r"\b(from|import) app\b")


def old_package(revision: str, directory: Path) -> None:
    """``app/`` at ``revision`` as the package ``calmon_old`` under ``directory``."""
    archive = subprocess.run(
        ["git", "archive", revision, "app"], cwd=REPO_ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    (directory / "app").rename(directory / OLD)
    for path in (directory / OLD).rglob("*.py"):
        path.write_text(_IMPORT.sub(rf"\1 {OLD}", path.read_text()))


def forget_old_package() -> None:
    """Drop ``calmon_old``'s modules from this process (its directory is gone after a run)."""
    for name in [n for n in sys.modules if n.split(".")[0] == OLD]:
        del sys.modules[name]


def _module(package: str, name: str) -> ModuleType:
    return importlib.import_module(f"{package}.metrics{name}")


class Window:
    """One window's parts and a reference, built with one version's types."""

    def __init__(self, package: str, rows: int, segments: int) -> None:
        self.package = package
        metrics = _module(package, "")
        self.metrics, self.grid = metrics, _module(package, ".prior_grid").DEFAULT_PRIOR_GRID
        self.nowcast = _module(package, ".nowcast").nowcast_window
        rng = np.random.default_rng(0)
        labels = (rng.random(rows) < 0.005).astype(np.int64)
        scores = rng.normal(2.5 * labels, 1.0)
        amounts = np.round(np.exp(rng.normal(3.0, 1.2, rows)), 2)
        cards = rng.integers(0, max(1, rows // 3), rows)
        segment = rng.integers(0, segments, rows)
        masks = [np.ones(rows, dtype=bool)] + [segment == s for s in range(segments)]
        columns = (scores, labels, amounts, cards)
        self.parts: dict[bool, list[tuple[Any, Any]]] = {
            fields: [self._part(columns, m, fields) for m in masks] for fields in (False, True)
        }
        # The segments as the worker reads them (a card as its 64-bit hash), for the sketches.
        hashes = rng.integers(-(2**63), 2**63 - 1, max(1, rows // 3), dtype=np.int64)[cards]
        self.rows = importlib.import_module(f"{package}.windows.rows")
        self.segment_rows = {
            fields: [
                self._segment_rows(str(s), (*columns[:3], hashes), segment == s, fields)
                for s in range(segments)
            ]
            for fields in (False, True)
        }
        reference_labels = (rng.random(280_000) < 0.005).astype(np.int64)
        reference_scores = rng.normal(2.5 * reference_labels, 1.0)
        edges = np.quantile(reference_scores[:20_000], np.linspace(0.0, 1.0, 64)[1:-1])

        def per_bin(x: np.ndarray) -> np.ndarray:
            return np.bincount(np.searchsorted(edges, x, side="right"), minlength=63)

        self.reference = _module(package, ".mixture").ClassHistogram(
            edges=edges,
            positives=per_bin(reference_scores[reference_labels == 1]),
            negatives=per_bin(reference_scores[reference_labels == 0]),
        )
        self.reference_sketch = metrics.build_sketch(
            reference_scores, reference_labels, threshold=2.0
        )
        self.counts = [(per_bin(scores[m]), int((scores[m] >= 2.0).sum())) for m in masks]
        self.classes = [(int(labels[m].sum()), int((labels[m] == 0).sum())) for m in masks]

    def _part(
        self, columns: tuple[np.ndarray, ...], mask: np.ndarray, fields: bool
    ) -> tuple[Any, Any]:
        """One part's sketch (with amounts and cards or without) and its alert budget."""
        scores, labels, amounts, cards = (column[mask] for column in columns)
        extra = {"amounts": amounts, "entities": cards} if fields else {}
        sketch = self.metrics.build_sketch(scores, labels, threshold=2.0, **extra)
        distinct = int(np.unique(cards).size) if fields else 0
        cost = 2.0 if fields else None
        budget = self.metrics.Budget.of(max(1, scores.size // 100), cost, scores.size, distinct)
        return sketch, budget

    def _segment_rows(
        self, name: str, columns: tuple[np.ndarray, ...], mask: np.ndarray, fields: bool
    ) -> Any:
        """One segment's rows as the worker's read gives them: every row labelled, with its
        amount and card's hash, or with none (NaN, NO_ENTITY)."""
        scores, labels, amounts, hashes = (column[mask] for column in columns)
        read = importlib.import_module(f"{self.package}.db.repositories.window_rows")
        none = _module(self.package, ".sketch_build").NO_ENTITY
        empty = np.empty(0)
        return read.SegmentRows(
            name,
            scores.size,
            scores,
            labels.astype(np.int8),
            empty,
            np.zeros(scores.size, dtype=np.int64),
            np.ones(scores.size, dtype=np.int8),
            amounts=amounts if fields else np.full(scores.size, np.nan),
            unlabelled_amounts=empty,
            entities=hashes if fields else np.full(scores.size, none, dtype=np.int64),
            unlabelled_entities=np.empty(0, dtype=np.int64),
        )

    def sketches(self, fields: bool) -> None:
        """The parts' sketches as the worker builds them (app/windows/inputs.py): the whole
        window's cards numbered once, then a sketch a part."""
        for part in self.rows.numbered_parts(self.segment_rows[fields]):
            self.metrics.build_sketch(
                part.scores,
                part.labels,
                threshold=2.0,
                amounts=part.amounts,
                entities=part.entities,
            )

    def bootstraps(self, fields: bool) -> None:
        for seed, (sketch, budget) in enumerate(self.parts[fields]):
            self.metrics.bootstrap(sketch, pi0=0.005, seed=seed, grid=self.grid, budget=budget)

    def null_draws(self) -> None:
        """The drop detector's null model of each part: prepared from the reference, drawn
        at the part's frauds and legitimate rows (1,000 replicates, as the worker draws; a
        part without both classes is not weighed, as in the worker)."""
        for seed, (positives, negatives) in enumerate(self.classes):
            null = self.metrics.NullModel.of(self.reference_sketch, pi0=0.005)
            if positives > 0 and negatives > 0:
                null.draw(positives, negatives, replicates=1000, seed=seed)

    def nowcasts(self) -> None:
        for seed, (counts, flagged) in enumerate(self.counts):
            self.nowcast(counts, flagged, self.reference, self.reference_sketch, seed=seed)


def paired(
    jobs: dict[str, Callable[[Window], None]], windows: dict[str, Window], iterations: int
) -> dict[str, dict[str, list[float]]]:
    """Each job's CPU seconds per version and iteration, the versions alternating which runs
    first (after one untimed run of each)."""
    for job in jobs.values():
        for window in windows.values():
            job(window)
    times: dict[str, dict[str, list[float]]] = {j: {v: [] for v in windows} for j in jobs}
    for iteration in range(iterations):
        order = list(windows) if iteration % 2 == 0 else list(reversed(windows))
        for name, job in jobs.items():
            for version in order:
                started = time.process_time()
                job(windows[version])
                times[name][version].append(time.process_time() - started)
    return times


JOBS: dict[str, Callable[[Window], None]] = {
    "bootstraps, alert budget alone": lambda w: w.bootstraps(False),
    "bootstraps, amounts and cards": lambda w: w.bootstraps(True),
    "sketches, alert budget alone": lambda w: w.sketches(False),
    "sketches, amounts and cards": lambda w: w.sketches(True),
    "nowcasts": lambda w: w.nowcasts(),
    "the detector's null draws": lambda w: w.null_draws(),
}


def report(times: dict[str, dict[str, list[float]]]) -> list[str]:
    lines = []
    for name, by_version in times.items():
        old, new = np.array(by_version["old"]), np.array(by_version["new"])
        ratios = new / old
        low, high = np.quantile(ratios, [0.25, 0.75])
        lines.append(
            f"  {name:32} old {np.median(old) * 1000:8.1f} ms   new {np.median(new) * 1000:8.1f}"
            f" ms   new / old {np.median(ratios):.3f} (quartiles {low:.3f}-{high:.3f})"
        )
    for what, (alone, valued) in (
        ("bootstraps", (times[name] for name in list(JOBS)[:2])),
        ("sketches", (times[name] for name in list(JOBS)[2:4])),
    ):
        shares = {v: np.median(np.array(valued[v]) / np.array(alone[v])) for v in ("old", "new")}
        lines.append(
            f"  what amounts and cards cost the {what}, as a ratio: old {shares['old']:.3f},"
            f" new {shares['new']:.3f}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--old", required=True, help="the git revision to compare against")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=31)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="calmon-metrics-ab-") as directory:
        old_package(args.old, Path(directory))
        sys.path.insert(0, directory)
        try:
            windows = {
                "old": Window(OLD, args.rows, args.segments),
                "new": Window("app", args.rows, args.segments),
            }
            times = paired(JOBS, windows, args.iterations)
        finally:
            sys.path.remove(directory)
            forget_old_package()
    parts = args.segments + 1
    print(f"{args.rows:,} rows, {parts} parts, old = {args.old}, {args.iterations} pairs, CPU")
    print("\n".join(report(times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
