"""Benchmark of the metrics kernel: ratios against the floor and the peer, measured in one run.

    python bench/kernel.py              # n = 10^5, 10^6, 10^7
    python bench/kernel.py --sizes 1e6  # one size

Per size (pi = 0.005, float64 scores, boolean labels), each time the minimum of several runs:

* evaluate / np.sort(scores)            target <= 1.5 at n = 10^6 (one float sort is the floor)
* sklearn (AP + ROC AUC) / evaluate     target >= 5   (sklearn computes 2 metrics, evaluate all)
* bootstrap(1000 replicates) / evaluate target <= 2
* evaluate_sketch(new pi0) / evaluate   target < 0.05
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from app.metrics import bootstrap, evaluate, evaluate_sketch


@dataclass(frozen=True)
class BenchResult:
    """Seconds (minimum over repeats) and the ratios the issue sets targets for."""

    n: int
    positives: int
    sketch_entries: int
    sort_s: float
    evaluate_s: float
    sklearn_s: float
    bootstrap_s: float
    resketch_s: float

    @property
    def evaluate_over_sort(self) -> float:
        return self.evaluate_s / self.sort_s

    @property
    def sklearn_over_evaluate(self) -> float:
        return self.sklearn_s / self.evaluate_s

    @property
    def bootstrap_over_evaluate(self) -> float:
        return self.bootstrap_s / self.evaluate_s

    @property
    def resketch_over_evaluate(self) -> float:
        return self.resketch_s / self.evaluate_s


def _best_of(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(n: int, *, repeats: int = 5, pi: float = 0.005, seed: int = 0) -> BenchResult:
    """Time every operation on one synthetic window of ``n`` rows."""
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < pi
    scores = rng.standard_normal(n) + 2.0 * labels
    threshold, pi0 = 2.0, 0.01
    result = evaluate(scores, labels, threshold=threshold, pi0=pi0)
    sketch = result.sketch
    slow_repeats = max(1, repeats // 2)
    return BenchResult(
        n=n,
        positives=result.positives,
        sketch_entries=int(sketch.scores.size),
        sort_s=_best_of(lambda: np.sort(scores), repeats),
        evaluate_s=_best_of(
            lambda: evaluate(scores, labels, threshold=threshold, pi0=pi0), repeats
        ),
        sklearn_s=_best_of(
            lambda: (average_precision_score(labels, scores), roc_auc_score(labels, scores)),
            slow_repeats,
        ),
        bootstrap_s=_best_of(lambda: bootstrap(sketch, pi0=pi0, seed=1), repeats),
        resketch_s=_best_of(lambda: evaluate_sketch(sketch, pi0=0.02), repeats * 4),
    )


def _report(r: BenchResult) -> str:
    return (
        f"n={r.n:>9,d} positives={r.positives:>6,d} sketch entries={r.sketch_entries:>6,d}  "
        f"evaluate/sort={r.evaluate_over_sort:5.2f} (<=1.5)  "
        f"sklearn/evaluate={r.sklearn_over_evaluate:6.1f} (>=5)  "
        f"bootstrap1000/evaluate={r.bootstrap_over_evaluate:6.2f} (<=2)  "
        f"evaluate_sketch/evaluate={r.resketch_over_evaluate:6.3f} (<0.05)  "
        f"[evaluate {r.evaluate_s * 1e3:.1f} ms, sort {r.sort_s * 1e3:.1f} ms]"
    )


def main() -> None:
    """Print one line of ratios per size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="*", type=float, default=[1e5, 1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for size in args.sizes:
        n = int(size)
        print(_report(run(n, repeats=args.repeats if n < 10**7 else 3)), flush=True)


if __name__ == "__main__":
    main()
