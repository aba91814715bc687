"""Coverage of the analyses' newer 95% intervals, by seeded simulation against known truths.

Binormal models (negatives N(0, 1), positives N(mu, sigma)) have population curves in closed
form, so every quantity an interval is about has a true value (integrals on a fine grid):

- ``trajectory``: the what-if temporal precision (Lampert eq. 4) and temporal AP along a fraud
  rate that quadruples over the span (log-linear), from one window's sketch
  (:func:`app.metrics.whatif.trajectory_intervals`);
- ``difference``: a window's champion - challenger difference of calibrated AP from the two
  windows' own bootstrap intervals (MOVER, :func:`app.metrics.compare.window_difference_interval`),
  on independent traffic (two sets of rows) and on shadow traffic (the same rows scored by both
  models: the same negatives' scores, the positives' noise shared).

    python -m bench.analyses_coverage [--sims 400] [--replicates 1000]

Prints one row per interval: its coverage of the truth, the Monte-Carlo standard error of that
coverage, and the mean width. tests/metrics/test_analyses_coverage.py runs a small version.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import norm

from app.metrics import CurveSketch, bootstrap, build_sketch, evaluate_sketch
from app.metrics.compare import window_difference_interval
from app.metrics.types import Float64Array
from app.metrics.whatif import along_trajectory, trajectory_intervals

THRESHOLD = 1.5
TRAJECTORY = [(0.0, 0.005), (30.0, 0.02)]  # log-linear: the fraud rate quadruples in 30 days
MIDDLE = 0.01


@dataclass(frozen=True)
class Binormal:
    """Positives N(mu, sigma) against negatives N(0, 1)."""

    mu: float
    sigma: float

    def _rates(self) -> tuple[Float64Array, Float64Array]:
        s = np.linspace(-12.0, self.mu + 12.0 * self.sigma, 40_001)[::-1]  # descending
        return norm.sf((s - self.mu) / self.sigma), norm.sf(s)

    def precision(self, pi: Float64Array) -> Float64Array:
        """Precision at the threshold at each fraud rate."""
        tpr = norm.sf((THRESHOLD - self.mu) / self.sigma)
        fpr = norm.sf(THRESHOLD)
        result: Float64Array = pi * tpr / (pi * tpr + (1.0 - pi) * fpr)
        return result

    def average_precision(self, pi: Float64Array) -> Float64Array:
        """The population's AP at each fraud rate: the integral of precision over recall."""
        tpr, fpr = self._rates()
        p = np.atleast_1d(pi)[:, None]
        with np.errstate(invalid="ignore"):
            precision = np.nan_to_num(p * tpr / (p * tpr + (1.0 - p) * fpr), nan=1.0)
        return np.asarray(np.trapezoid(precision, tpr, axis=1), dtype=np.float64)

    def draw(
        self, rng: np.random.Generator, n: int, pi: float, shared: tuple[Float64Array, ...] = ()
    ) -> tuple[Float64Array, npt.NDArray[np.int8], tuple[Float64Array, ...]]:
        """n rows: scores, labels and the draws (labels' uniforms, negatives, positives' noise)
        another model can score the same rows with (``shared``)."""
        u, base, noise = shared or (rng.random(n), rng.normal(0.0, 1.0, n), rng.normal(0, 1, n))
        labels = (u < pi).astype(np.int8)
        scores = np.where(labels == 1, self.mu + self.sigma * noise, base)
        return scores, labels, (u, base, noise)


def _covers(interval: tuple[float, float] | None, truth: float) -> bool:
    return interval is not None and interval[0] <= truth <= interval[1]


@dataclass(frozen=True)
class Coverage:
    """How often an interval held the truth, over ``sims`` draws."""

    name: str
    hits: int
    sims: int
    width: float

    @property
    def rate(self) -> float:
        """The share of draws whose interval held the truth."""
        return self.hits / self.sims

    @property
    def standard_error(self) -> float:
        """Monte-Carlo standard error of the rate."""
        return math.sqrt(self.rate * (1.0 - self.rate) / self.sims)


def trajectory_coverage(sims: int, replicates: int, rows: int, seed: int) -> list[Coverage]:
    """Temporal precision and temporal AP along :data:`TRAJECTORY` from one window of ``rows``
    rows at pi = 0.01, and as a baseline the same windows' intervals at pi = 0.01 itself."""
    model = Binormal(2.0, 0.8)
    times = np.linspace(TRAJECTORY[0][0], TRAJECTORY[-1][0], 301)
    knots = np.array([t for t, _ in TRAJECTORY])
    logs = np.log(np.array([p for _, p in TRAJECTORY]))
    pis = np.exp(np.interp(times, knots, logs))
    # The means over time of the population's values: trapezoids on a fine grid of t.
    span = times[-1] - times[0]
    truths = {
        "precision": float(np.trapezoid(model.precision(pis), times)) / span,
        "average_precision": float(np.trapezoid(model.average_precision(pis), times)) / span,
    }
    # The baseline: the same draws' what-if intervals at one fraud rate (the existing bootstrap).
    at = np.array([MIDDLE])
    fixed = {
        "precision": float(model.precision(at)[0]),
        "average_precision": float(model.average_precision(at)[0]),
    }
    labels_of = {
        **{f"trajectory: temporal {k.replace('_', ' ')}": k for k in truths},
        **{f"baseline: {k.replace('_', ' ')} at pi = {MIDDLE}": k for k in fixed},
    }
    hits = dict.fromkeys(labels_of, 0)
    widths = dict.fromkeys(labels_of, 0.0)
    rng = np.random.default_rng(seed)
    for i in range(sims):
        scores, labels, _ = model.draw(rng, rows, 0.01)
        sketch = build_sketch(scores, labels, threshold=THRESHOLD)
        analysis = along_trajectory(sketch, TRAJECTORY, "log")
        moving = trajectory_intervals(sketch, analysis, TRAJECTORY, seed=i, replicates=replicates)
        still = bootstrap(sketch, pi0=MIDDLE, seed=i, replicates=replicates).calibrated
        intervals = [*moving, still["precision"], still["average_precision"]]
        targets = [*truths.values(), *fixed.values()]
        for label, interval, truth in zip(labels_of, intervals, targets, strict=True):
            hits[label] += _covers(interval, truth)
            widths[label] += (interval[1] - interval[0]) / sims if interval else math.nan
    return [Coverage(label, hits[label], sims, widths[label]) for label in labels_of]


def _window(
    sketch: CurveSketch, pi0: float, seed: int, replicates: int
) -> tuple[float, tuple[float, float] | None]:
    value = evaluate_sketch(sketch, pi0=pi0).calibrated["average_precision"]
    assert value is not None  # the draws always hold positives
    ci = bootstrap(sketch, pi0=pi0, seed=seed, replicates=replicates).calibrated
    return value, ci["average_precision"]


def difference_coverage(
    sims: int, replicates: int, rows: int, seed: int, *, shadow: bool
) -> Coverage:
    """A window's challenger - champion calibrated AP at pi0 = 0.01 (rows at pi = 0.02)."""
    champion, challenger = Binormal(2.0, 1.0), Binormal(2.0, 0.6)
    pi0 = 0.01
    at = np.array([pi0])
    truth = float(challenger.average_precision(at)[0] - champion.average_precision(at)[0])
    rng = np.random.default_rng(seed)
    hits, width = 0, 0.0
    for i in range(sims):
        scores_a, labels_a, draws = champion.draw(rng, rows, 0.02)
        scores_b, labels_b, _ = challenger.draw(rng, rows, 0.02, draws if shadow else ())
        a = _window(build_sketch(scores_a, labels_a, threshold=THRESHOLD), pi0, 2 * i, replicates)
        b = _window(
            build_sketch(scores_b, labels_b, threshold=THRESHOLD), pi0, 2 * i + 1, replicates
        )
        if a[1] is None or b[1] is None:
            continue
        interval = window_difference_interval(a[0], a[1], b[0], b[1])
        hits += _covers(interval, truth)
        width += (interval[1] - interval[0]) / sims
    traffic = "shadow (same rows)" if shadow else "independent rows"
    return Coverage(f"per-window AP difference, {traffic}", hits, sims, width)


def main(argv: list[str] | None = None) -> int:
    """Run every simulation and print the coverage table (markdown)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=400)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    rows = trajectory_coverage(args.sims, args.replicates, args.rows, args.seed)
    for shadow in (False, True):
        rows.append(
            difference_coverage(args.sims, args.replicates, args.rows, args.seed, shadow=shadow)
        )
    print(
        f"{args.sims} draws of {args.rows:,} rows, {args.replicates} replicates, seed {args.seed}"
    )
    print("| 95% interval | coverage | +- (MC s.e.) | mean width |")
    print("| --- | ---: | ---: | ---: |")
    for c in rows:
        print(f"| {c.name} | {c.rate:.3f} | {c.standard_error:.3f} | {c.width:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
