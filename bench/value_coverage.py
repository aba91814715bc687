"""How often do the value metrics' 95% bootstrap intervals hold the true value?

    python -m bench.value_coverage            # the table of docs/alert-budget.md (300 windows each)
    python -m bench.value_coverage --quick    # a smoke run
    python -m bench.value_coverage --sizes 10 25   # some rows of the table (same draws)

Siblini et al.'s Gaussian model (legitimate scores N(0, 1), fraud N(2.5, 1), threshold 2.0),
fraud rate 1%, amounts lognormal (legitimate exp(N(3, 1.2)), fraud exp(N(4, 1.2)): frauds are
larger and the tail is heavy), review cost 5. Windows hold 10, 25, 100 or 1,000 frauds on
average. Each window's intervals come from calmon's bootstrap (app.metrics.bootstrap, 400
replicates, its default block merging) twice: ``rows``, the window without entities (the row
bootstrap), and ``cards``, the same window with each row's card (the card bootstrap, which
resamples cards); the truth is the population's value (1e7 rows drawn once; net savings scaled
to the window's rows), regular and calibrated to pi0 = 0.5%.

Variants: ``independent`` rows; ``bursts``: frauds per card, 1 + Poisson(2) frauds a card with
correlated scores (0.5) and amounts (one card's frauds share a level, 0.7), as fraud comes in
practice: the row bootstrap treats a card's frauds as independent, so it cannot see the
extra spread. ``poisson bursts``: the same cards, but a window holds a Poisson number of them
(frauds at a fixed row rate, as ``bursts`` draws them, vary less than independently compromised
cards do). A legitimate row is a card of its own (in every variant; ``independent``: every row
is), so the card codes cost no random draws: the ``rows`` bootstrap sees the windows it saw
before cards were added.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from app.metrics import Budget, bootstrap, build_sketch, evaluate_sketch
from app.metrics.types import Float64Array, Int64Array

THRESHOLD = 2.0
PI = 0.01
PI0 = 0.005
COST = 5.0
NAMES = ("value_recall", "value_precision", "net_savings")
TOP_K = ("precision_at_k", "entity_precision_at_k")
"""The alert budget's metrics, at a capacity of :data:`CHECKED` of a window's rows (and the
same number of its cards, for card precision)."""
CHECKED = 0.01
Window = tuple[Float64Array, Int64Array, Float64Array, Int64Array]  # scores, labels, amounts, cards
BOOTSTRAPS = ("rows", "cards")


@dataclass(frozen=True)
class Variant:
    name: str
    draw: Callable[[np.random.Generator, int], Window]


def independent(rng: np.random.Generator, n: int) -> Window:
    labels = (rng.random(n) < PI).astype(np.int64)
    scores = rng.normal(2.5 * labels, 1.0)
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    return scores, labels, amounts, np.arange(n, dtype=np.int64)


def bursts(rng: np.random.Generator, n: int) -> Window:
    """Legitimate rows as above; frauds by card: 1 + Poisson(2) a card, the card's frauds
    sharing half their score noise and 70% of their log-amount noise."""
    frauds = rng.binomial(n, PI)
    sizes: list[int] = []
    while sum(sizes) < frauds:
        sizes.append(1 + int(rng.poisson(2.0)))
    return _card_rows(rng, n, np.array(sizes, dtype=np.int64), frauds)


def _card_rows(
    rng: np.random.Generator, n: int, sizes: Int64Array, frauds: int | None = None
) -> Window:
    """A window of ``n`` rows whose frauds are cards of ``sizes`` frauds (the first ``frauds``
    of them: all when None), sharing half their score noise and 70% of their log-amount
    noise; every legitimate row a card of its own."""
    frauds = int(sizes.sum()) if frauds is None else frauds
    card = np.repeat(np.arange(len(sizes)), sizes)[:frauds]
    shared_score = rng.normal(0.0, 1.0, len(sizes))[card]
    shared_amount = rng.normal(0.0, 1.0, len(sizes))[card]
    fraud_scores = 2.5 + np.sqrt(0.5) * shared_score + np.sqrt(0.5) * rng.normal(size=frauds)
    fraud_amounts = np.exp(
        4.0 + 1.2 * (np.sqrt(0.7) * shared_amount + np.sqrt(0.3) * rng.normal(size=frauds))
    )
    legit = max(n - frauds, 0)
    scores = np.concatenate([fraud_scores, rng.normal(0.0, 1.0, legit)])
    labels = np.concatenate([np.ones(frauds, np.int64), np.zeros(legit, np.int64)])
    amounts = np.concatenate([fraud_amounts, np.exp(rng.normal(3.0, 1.2, legit))])
    cards = np.concatenate([card, len(sizes) + np.arange(legit)]).astype(np.int64)
    return scores, labels, amounts, cards


def poisson_bursts(rng: np.random.Generator, n: int) -> Window:
    """As :func:`bursts`, but a window's fraud cards are a Poisson count (mean: the frauds
    ``bursts`` draws, over a card's mean of 3), as when cards are compromised independently:
    its frauds vary more than a fixed row rate gives, as the card bootstrap assumes."""
    sizes = 1 + rng.poisson(2.0, rng.poisson(n * PI / 3.0))
    return _card_rows(rng, n, sizes)


VARIANTS = (
    Variant("independent", independent),
    Variant("bursts", bursts),
    Variant("poisson bursts", poisson_bursts),
)


def truth(variant: Variant, rows: int, seed: int) -> dict[str, float]:
    """The population's values (per row for net savings), regular and calibrated."""
    rng = np.random.default_rng([seed, 99])
    scores, labels, amounts, cards = variant.draw(rng, rows)
    budget = budget_of(rows, cards)
    # Two sketches: the cards' sums for the card bootstrap are not needed (and would take a
    # row per card of the population's 10^7).
    valued = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts)
    result = evaluate_sketch(valued, pi0=PI0, budget=budget)
    by_card = build_sketch(scores, labels, threshold=THRESHOLD, entities=cards)
    cards_result = evaluate_sketch(by_card, pi0=PI0, budget=budget)
    card = "entity_precision_at_k"
    sides = (
        ("regular", {**result.regular, card: cards_result.regular[card]}),
        ("calibrated", {**result.calibrated, card: cards_result.calibrated[card]}),
    )
    out = {}
    for variant_name, values in sides:
        for name in (*NAMES, *TOP_K):
            value = values[name]
            assert value is not None
            out[f"{variant_name}.{name}"] = value / rows if name == "net_savings" else value
    return out


def budget_of(rows: int, cards: Int64Array) -> Budget:
    """The review cost, and a capacity of :data:`CHECKED` of the rows: the top-k metrics'
    shares of the rows and of the cards (a population's truth and a window alike)."""
    capacity = max(1, round(CHECKED * rows))
    return Budget.of(capacity, COST, rows, int(np.unique(cards).size))


@dataclass(frozen=True)
class Run:
    windows: int
    replicates: int
    population: int
    seed: int = 24


def coverage(variant: Variant, frauds: int, run: Run) -> dict[str, dict[str, float]]:
    """Per bootstrap (:data:`BOOTSTRAPS`), the share of the run's windows whose interval holds
    the truth, per metric."""
    rows = round(frauds / PI)
    windows, replicates, seed = run.windows, run.replicates, run.seed
    true = truth(variant, run.population, seed)
    rng = np.random.default_rng([seed, frauds, len(variant.name)])
    held = {way: dict.fromkeys(true, 0) for way in BOOTSTRAPS}
    counted = {way: dict.fromkeys(true, 0) for way in BOOTSTRAPS}
    for i in range(windows):
        scores, labels, amounts, cards = variant.draw(rng, rows)
        budget = budget_of(rows, cards)
        for way in BOOTSTRAPS:
            entities = cards if way == "cards" else None
            sketch = build_sketch(
                scores, labels, threshold=THRESHOLD, amounts=amounts, entities=entities
            )
            intervals = bootstrap(sketch, pi0=PI0, seed=i, replicates=replicates, budget=budget)
            for key, value in true.items():
                side, name = key.split(".")
                interval = getattr(intervals, side)[name]
                if interval is None:
                    continue
                target = value * sketch.n if name == "net_savings" else value
                counted[way][key] += 1
                held[way][key] += int(interval[0] <= target <= interval[1])
    return {
        way: {k: held[way][k] / counted[way][k] if counted[way][k] else float("nan") for k in true}
        for way in BOOTSTRAPS
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument(
        "--sizes", type=int, nargs="+", help="frauds a window (default 10 25 100 1000)"
    )
    args = parser.parse_args(argv)
    run = Run(30, 200, 10**6) if args.quick else Run(300, 400, 10**7)
    sizes = (25, 100) if args.quick else (10, 25, 100, 1_000)
    sizes = tuple(args.sizes) if args.sizes else sizes
    print(f"coverage of 95% intervals, {run.windows} windows each, {run.replicates} replicates")
    found = {(v.name, frauds): coverage(v, frauds, run) for v in VARIANTS for frauds in sizes}
    for names, ways, title in (
        (NAMES, BOOTSTRAPS, "the value metrics"),
        (TOP_K, ("cards",), f"the top-k metrics, {CHECKED:.0%} of the rows checked"),
    ):
        keys = [f"{side}.{name}" for side in ("regular", "calibrated") for name in names]
        print(f"\n{title}\n| situation | frauds a window | bootstrap | " + " | ".join(keys) + " |")
        print("|---|---|---|" + "---|" * len(keys))
        for (variant, frauds), shares in found.items():
            for way in ways:
                cells = " | ".join(f"{shares[way][k]:.1%}" for k in keys)
                print(f"| {variant} | {frauds:,} | {way} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
