"""How often do the segment comparison's 95% intervals hold the true differences?

    python -m bench.segment_coverage            # the table of docs (200 periods a row)
    python -m bench.segment_coverage --quick    # a smoke run

A model with two named segments and rows sent without one ("the rest"), each binormal
(legitimate scores N(0, 1)): segment a at fraud rate 1% with frauds N(2.0, 1), segment b at 3%
with frauds N(1.2, 1), the rest at 2% with frauds N(1.5, 1); threshold 1.5; calibrated to
pi0 = 2%. A period holds a's rows, half as many of b's and of the rest's, sized so that segment a
has 25, 100 or 1,000 frauds on average. The truth is each population's value on 4 million rows
drawn once (the same proportions). For every period calmon's comparison
(app.metrics.segment_compare, 400 replicates) gives a's value, its difference to the whole
model and its difference to segment b, each with a 95% interval; the table counts how often
each interval holds the truth.

Variants: ``independent`` rows; ``bursts``: frauds by card, 1 + Poisson(2) frauds a card
sharing half their score noise. The row bootstrap treats a card's frauds as independent, so
it cannot see the extra spread there.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.metrics import build_sketch, evaluate_sketch
from app.metrics.segment_compare import SegmentQuery, compare_segments
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array, Int64Array

THRESHOLD = 1.5
PI0 = 0.02
METRICS = ("average_precision", "precision", "recall", "f1", "roc_auc")
# Segment: (fraud rate, fraud score mean, share of the rows relative to segment a).
SEGMENTS = {"a": (0.01, 2.0, 1.0), "b": (0.03, 1.2, 0.5), "rest": (0.02, 1.5, 0.5)}
Rows = tuple[Float64Array, Int64Array]
Draw = Callable[[np.random.Generator, int, float, float], Rows]


def independent(rng: np.random.Generator, n: int, pi: float, mean: float) -> Rows:
    labels = (rng.random(n) < pi).astype(np.int64)
    scores = np.where(labels == 1, rng.normal(mean, 1.0, n), rng.normal(0.0, 1.0, n))
    return np.round(scores, 3).astype(np.float64), labels


def bursts(rng: np.random.Generator, n: int, pi: float, mean: float) -> Rows:
    """Legitimate rows as above; frauds by card (1 + Poisson(2) a card), a card's frauds
    sharing half their score noise."""
    frauds = int(rng.binomial(n, pi))
    sizes = 1 + rng.poisson(2.0, size=frauds + 1)
    cards = int(np.searchsorted(np.cumsum(sizes), frauds)) + 1
    card = np.repeat(np.arange(cards), sizes[:cards])[:frauds]
    shared = rng.normal(0.0, 1.0, cards)[card]
    fraud_scores = mean + np.sqrt(0.5) * shared + np.sqrt(0.5) * rng.normal(0.0, 1.0, frauds)
    scores = np.concatenate([fraud_scores, rng.normal(0.0, 1.0, n - frauds)])
    labels = np.concatenate([np.ones(frauds, np.int64), np.zeros(n - frauds, np.int64)])
    return np.round(scores, 3).astype(np.float64), labels


@dataclass(frozen=True)
class Variant:
    name: str
    draw: Draw


VARIANTS = (Variant("independent", independent), Variant("bursts", bursts))


@dataclass(frozen=True)
class Run:
    periods: int = 200
    replicates: int = 400
    population: int = 4_000_000


def _period(draw: Draw, rng: np.random.Generator, rows_a: int) -> dict[str, Rows]:
    return {
        name: draw(rng, int(rows_a * share), pi, mean)
        for name, (pi, mean, share) in SEGMENTS.items()
    }


def _sketch(parts: list[Rows]) -> CurveSketch:
    scores = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    return build_sketch(scores, labels, threshold=THRESHOLD)


def truth(draw: Draw, population: int) -> dict[str, dict[str, float]]:
    """Each metric's value (calibrated to pi0) of segment a, segment b and the whole model."""
    rows = _period(draw, np.random.default_rng(0), population // 2)
    out: dict[str, dict[str, float]] = {}
    for name, parts in (("a", [rows["a"]]), ("b", [rows["b"]]), ("whole", list(rows.values()))):
        calibrated = evaluate_sketch(_sketch(parts), pi0=PI0).calibrated
        out[name] = {m: float(calibrated[m] or np.nan) for m in METRICS}
    return out


def coverage(variant: Variant, frauds: int, run: Run) -> dict[str, dict[str, float]]:
    """Share of periods whose interval holds the truth: per kind (a's value, a - whole,
    a - b) and metric."""
    true = truth(variant.draw, run.population)
    rows_a = int(frauds / SEGMENTS["a"][0])
    kinds = ("value", "minus whole", "minus b")
    held = {k: dict.fromkeys(METRICS, 0) for k in kinds}
    for period in range(run.periods):
        rows = _period(variant.draw, np.random.default_rng(1000 + period), rows_a)
        whole = _sketch(list(rows.values()))
        segments = {name: _sketch([rows[name]]) for name in ("a", "b")}
        for baseline in (None, "b"):
            query = SegmentQuery(
                pi0=PI0, metrics=METRICS, baseline=baseline, seed=period, replicates=run.replicates
            )
            out = compare_segments(whole, segments, query)["a"]
            for metric in METRICS:
                value = out[metric]
                if baseline is None:
                    checks = {
                        "value": (value.ci, true["a"][metric]),
                        "minus whole": (
                            value.difference_ci,
                            true["a"][metric] - true["whole"][metric],
                        ),
                    }
                else:
                    checks = {
                        "minus b": (value.difference_ci, true["a"][metric] - true["b"][metric])
                    }
                for kind, (ci, target) in checks.items():
                    held[kind][metric] += ci is not None and ci[0] <= target <= ci[1]
    return {k: {m: held[k][m] / run.periods for m in METRICS} for k in kinds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 periods, smaller population")
    args = parser.parse_args(argv)
    run = Run(periods=30, replicates=200, population=400_000) if args.quick else Run()
    sizes = (100,) if args.quick else (25, 100, 1000)
    print(
        f"95% intervals holding the truth, {run.periods} periods a row, {run.replicates} replicates"
    )
    print("| rows | frauds in a | interval | " + " | ".join(METRICS) + " |")
    print("|---|---|---|" + "---|" * len(METRICS))
    for variant in VARIANTS:
        for frauds in sizes:
            found = coverage(variant, frauds, run)
            for kind, values in found.items():
                cells = " | ".join(f"{100 * values[m]:.0f}%" for m in METRICS)
                print(f"| {variant.name} | {frauds} | {kind} | {cells} |")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
