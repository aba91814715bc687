"""How often do the segment comparison's 95% intervals hold the true differences?

    python -m bench.segment_coverage            # the table of docs (200 periods a row)
    python -m bench.segment_coverage --quick    # a smoke run
    python -m bench.segment_coverage --rows bursts    # one variant (two processes: both)

A model with two named segments and rows sent without one ("the rest"), each binormal
(legitimate scores N(0, 1)): segment a at fraud rate 1% with frauds N(2.0, 1), segment b at 3%
with frauds N(1.2, 1), the rest at 2% with frauds N(1.5, 1); threshold 1.5; calibrated to
pi0 = 2%. A period is 7, 14 or 30 windows (a week, two, a month); a window holds a's rows, half as
many of b's and of the rest's, sized so that segment a has 10, 25 or 100 frauds a window on
average. The truth is each population's value on 20 million independent rows drawn once (the
same proportions; bursts correlate a card's frauds but leave each fraud's score N(mean, 1), so
the population values are the same in both variants, and independent rows estimate them with
less noise: at 3,000 frauds a period, truths from 4 million bursty rows had sampling error
enough to move coverage by a few points). For every period calmon's comparison
(app.metrics.segment_compare, 400 replicates, given the period's pooled sketches and its
windows' sketches, as the route is) gives a's value, its difference to the whole model and its
difference to segment b, each with a 95% interval; the table counts how often each interval
holds the truth. The same periods' intervals from the row bootstrap alone (no windows: the
method before the window bootstrap) give the widths and coverage it is compared with.

Variants: ``independent`` rows; ``bursts``: frauds by card, 1 + Poisson(2) frauds a card
sharing half their score noise, a card's frauds in one window. The row bootstrap treats a
card's frauds as independent, so it cannot see the extra spread there; the window bootstrap can.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.metrics import build_sketch, evaluate_sketch
from app.metrics.segment_compare import SegmentQuery, SegmentWindow, compare_segments
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array, Int64Array, Interval

THRESHOLD = 1.5
PI0 = 0.02
METRICS = ("average_precision", "precision", "recall", "f1", "roc_auc")
KINDS = ("value", "minus whole", "minus b")
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
    population: int = 20_000_000


@dataclass(frozen=True)
class Situation:
    """A period of ``windows`` windows, segment a with ``frauds`` frauds a window on average."""

    windows: int
    frauds: int


Intervals = dict[str, dict[str, list[Interval | None]]]
"""Per kind (a's value, a - whole, a - b) and metric, each period's interval."""


def _period(draw: Draw, rng: np.random.Generator, rows_a: int) -> dict[str, Rows]:
    return {
        name: draw(rng, int(rows_a * share), pi, mean)
        for name, (pi, mean, share) in SEGMENTS.items()
    }


def _sketch(parts: list[Rows]) -> CurveSketch:
    scores = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    return build_sketch(scores, labels, threshold=THRESHOLD)


def truth(population: int) -> dict[str, dict[str, float]]:
    """Each metric's value (calibrated to pi0) of segment a, segment b and the whole model."""
    rows = _period(independent, np.random.default_rng(0), population // 2)
    out: dict[str, dict[str, float]] = {}
    for name, parts in (("a", [rows["a"]]), ("b", [rows["b"]]), ("whole", list(rows.values()))):
        calibrated = evaluate_sketch(_sketch(parts), pi0=PI0).calibrated
        out[name] = {m: float(calibrated[m] or np.nan) for m in METRICS}
    return out


def targets(true: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """What each kind of interval should hold."""
    return {
        "value": true["a"],
        "minus whole": {m: true["a"][m] - true["whole"][m] for m in METRICS},
        "minus b": {m: true["a"][m] - true["b"][m] for m in METRICS},
    }


def intervals(variant: Variant, situation: Situation, run: Run) -> tuple[Intervals, Intervals]:
    """Each period's intervals: with the windows (as the route gives them), and from the row
    bootstrap alone (the same replicates, not widened)."""
    rows_a = int(situation.frauds / SEGMENTS["a"][0])
    widened: Intervals = {k: {m: [] for m in METRICS} for k in KINDS}
    rows_only: Intervals = {k: {m: [] for m in METRICS} for k in KINDS}
    for period in range(run.periods):
        rng = np.random.default_rng(1000 + period)
        days = [_period(variant.draw, rng, rows_a) for _ in range(situation.windows)]
        windows = [
            SegmentWindow(
                whole=_sketch(list(day.values())),
                segments={name: _sketch([day[name]]) for name in ("a", "b")},
            )
            for day in days
        ]
        whole = _sketch([part for day in days for part in day.values()])
        segments = {name: _sketch([day[name] for day in days]) for name in ("a", "b")}
        for baseline in (None, "b"):
            query = SegmentQuery(
                pi0=PI0, metrics=METRICS, baseline=baseline, seed=period, replicates=run.replicates
            )
            for found, given in ((widened, windows), (rows_only, [])):
                out = compare_segments(whole, segments, query, given)["a"]
                for metric in METRICS:
                    if baseline is None:
                        found["value"][metric].append(out[metric].ci)
                        found["minus whole"][metric].append(out[metric].difference_ci)
                    else:
                        found["minus b"][metric].append(out[metric].difference_ci)
    return widened, rows_only


def coverage(found: Intervals, target: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Share of periods whose interval holds the truth, per kind and metric."""
    return {
        kind: {
            m: float(np.mean([ci is not None and ci[0] <= target[kind][m] <= ci[1] for ci in cis]))
            for m, cis in by_metric.items()
        }
        for kind, by_metric in found.items()
    }


def mean_width(found: Intervals) -> dict[str, dict[str, float]]:
    """Mean width of the intervals given, per kind and metric."""
    return {
        kind: {
            m: float(np.mean([ci[1] - ci[0] for ci in cis if ci is not None]))
            for m, cis in by_metric.items()
        }
        for kind, by_metric in found.items()
    }


SITUATIONS = tuple(Situation(w, f) for w in (7, 14, 30) for f in (10, 25, 100))


def _percent(values: dict[str, float]) -> str:
    return " | ".join(f"{100 * values[m]:.1f}%" for m in METRICS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 periods, smaller population")
    parser.add_argument(
        "--rows", choices=[v.name for v in VARIANTS], help="one variant only (default: both)"
    )
    args = parser.parse_args(argv)
    variants = [v for v in VARIANTS if args.rows in (None, v.name)]
    run = Run(periods=20, replicates=200, population=400_000) if args.quick else Run()
    situations = (Situation(7, 25),) if args.quick else SITUATIONS
    print(
        f"95% intervals holding the truth, {run.periods} periods a row, {run.replicates} "
        "replicates; seeds: truth 0, period p 1000 + p, its bootstrap p"
    )
    print("| rows | windows | frauds in a a window | interval | " + " | ".join(METRICS) + " |")
    print("|---|---|---|---|" + "---|" * len(METRICS))
    widths: list[str] = []
    target = targets(truth(run.population))
    for variant in variants:
        for situation in situations:
            widened, rows_only = intervals(variant, situation, run)
            held, held_before = coverage(widened, target), coverage(rows_only, target)
            for kind in KINDS:
                print(
                    f"| {variant.name} | {situation.windows} | {situation.frauds} | {kind} | "
                    f"{_percent(held[kind])} |"
                )
            after, before = mean_width(widened), mean_width(rows_only)
            ratio = np.mean([after[k][m] / before[k][m] for k in KINDS for m in METRICS])
            lowest = min(min(v.values()) for v in held_before.values())
            highest = max(max(v.values()) for v in held_before.values())
            widths.append(
                f"| {variant.name} | {situation.windows} | {situation.frauds} | "
                f"{100 * lowest:.1f}-{100 * highest:.1f}% | "
                f"{before['value']['average_precision']:.4f} | "
                f"{after['value']['average_precision']:.4f} | {ratio:.2f} |"
            )
            sys.stdout.flush()
    print("\nThe row bootstrap alone on the same periods, and the widths")
    print(
        "| rows | windows | frauds in a a window | row bootstrap alone: held | "
        "a's AP width, rows alone | with windows | width ratio, mean of all cells |"
    )
    print("|---|---|---|---|---|---|---|")
    print("\n".join(widths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
