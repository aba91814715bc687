"""The value metrics' card bootstrap (issue 24): replicates that resample entities, not rows.

Checked against a per-entity Poisson bootstrap written out directly from the raw rows with the
same random draws, for the normal part (entities without a fraud, and fraud entities past the
ones drawn exactly) by its mean and covariance,
and for what must not move: the other metrics' intervals, windows without entities, the
sketch's bytes (old ones still read), pooling.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

import numpy as np
import pytest

from app.metrics import (
    Budget,
    CurveSketch,
    InvalidInputError,
    bootstrap,
    build_sketch,
    pool_sketches,
)
from app.metrics._card_bootstrap import VALUE_METRICS, CardDraws, CardReplicates, at_threshold
from app.metrics._kernel import Budgets, Prepared
from app.metrics._poisson_inversion import poisson_inverted
from app.metrics._studentized import standard_error
from app.metrics.prior_grid import PriorGrid
from app.metrics.sketch_entity_values import EXACT_FRAUD_ENTITIES, EntityValues
from app.metrics.types import Float64Array as Floats
from app.metrics.types import Int64Array as Ints
from bench.value_coverage import bursts

THRESHOLD = 1.0
COST = 3.0


def _window(seed: int, n: int = 3000, cards: int = 400) -> tuple[Floats, Ints, Floats, Ints]:
    """Rows on ``cards`` cards, ties in the scores, some zero amounts."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.08).astype(np.int64)
    scores = np.round(rng.normal(1.5 * labels, 1.0), 1)
    amounts = rng.lognormal(3.0 + labels, 1.2)
    amounts[rng.random(n) < 0.05] = 0.0
    return scores, labels, amounts, rng.integers(0, cards, n)


def _direct_sums(
    scores: Floats, labels: Ints, amounts: Floats, codes: Ints
) -> tuple[list[tuple[float, ...]], int]:
    """Each fraud entity's seven sums, written out row by row (sorted, as the sketch keeps
    them), and how many entities hold no fraud."""
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0] * 7)
    for s, y, a, c in zip(
        scores.tolist(), labels.tolist(), amounts.tolist(), codes.tolist(), strict=True
    ):
        flagged = s >= THRESHOLD
        row = sums[c]
        if y:
            row[0] += 1
            row[1] += flagged
            row[2] += a if flagged else 0.0
            row[3] += a
        else:
            row[4] += 1
            row[5] += flagged
            row[6] += a if flagged else 0.0
    fraud = sorted(tuple(v) for v in sums.values() if v[0] > 0)
    return fraud, len(sums) - len(fraud)


def test_entity_replicates_equal_a_direct_per_entity_poisson_bootstrap() -> None:
    """Every entity holds a fraud (so no normal part): each replicate is the entities' sums
    weighted by the same Poisson(1) draws, and the value metrics follow by their formulas."""
    scores, labels, amounts, codes = _window(1)
    frauds_on = np.unique(codes[labels == 1])  # legitimate rows only on cards with a fraud
    codes = np.where(labels == 1, codes, frauds_on[codes % frauds_on.size])
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=codes)
    values = sketch.entity_values
    assert values is not None
    assert values.legit_count == 0
    assert values.fraud.shape[0] <= EXACT_FRAUD_ENTITIES  # every fraud entity drawn exactly
    fraud, legit = _direct_sums(scores, labels, amounts, codes)
    assert legit == 0
    np.testing.assert_allclose(values.fraud, np.array(fraud), rtol=1e-12)

    replicates, pi0 = 500, 0.01
    weights = poisson_inverted(1.0, (replicates, len(fraud)), np.random.default_rng(7))
    pos, tp, caught, total, neg, fp, flagged = (weights @ np.array(fraud)).T
    k = (pos / (pos + neg)) * (1 - pi0) / (pi0 * (1 - pos / (pos + neg)))
    scale = (pos + neg) / (pos + k * neg)  # a window of the same size at pi0
    direct = {
        "value_recall": (caught / total, caught / total),
        "value_precision": (caught / (caught + flagged), caught / (caught + k * flagged)),
        "net_savings": (caught - COST * (tp + fp), (caught - COST * (tp + k * fp)) * scale),
    }
    totals = CardDraws.of(values, replicates, np.random.default_rng(7)).totals
    got = CardReplicates.of(totals, THRESHOLD, [pi0], Budgets(review_cost=COST))
    for name in VALUE_METRICS:
        regular, calibrated = direct[name]
        np.testing.assert_allclose(got.regular[name], regular, rtol=1e-9, err_msg=name)
        if name in got.calibrated[0]:
            np.testing.assert_allclose(got.calibrated[0][name], calibrated, rtol=1e-9)
    assert set(got.calibrated[0]) == {"value_precision", "net_savings"}  # recall: invariant


def test_the_normal_part_has_the_weighted_sums_mean_and_covariance() -> None:
    scores, labels, amounts, codes = _window(2, n=4000, cards=2500)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=codes)
    values = sketch.entity_values
    assert values is not None
    fraud, legit = _direct_sums(scores, labels, amounts, codes)
    assert values.legit_count == legit > 1000
    np.testing.assert_allclose(values.totals()[:4], np.sum(fraud, axis=0)[:4], rtol=1e-12)
    # Poisson(1) weights: the covariance of a weighted sum is the sum of the products.
    expected = np.array(fraud).T @ np.array(fraud)
    expected[4:, 4:] += values.legit_products
    scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
    assert len(fraud) > 60
    for exact in (EXACT_FRAUD_ENTITIES, 20):  # every fraud entity drawn exactly, or 20 of them
        draws = values.draw(40_000, np.random.default_rng(3), exact=exact)
        np.testing.assert_allclose(draws.mean(axis=0), values.totals(), rtol=0.01)
        # In correlation units: 40,000 draws put a sample correlation within 0.005 (one s.e.).
        assert np.max(np.abs(np.cov(draws.T) - expected) / scale) < 0.03, exact


def test_only_the_value_intervals_change_and_windows_without_entities_keep_the_rows() -> None:
    scores, labels, amounts, codes = _window(3)
    budget = Budget(review_cost=COST)
    with_cards = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=codes)
    assert with_cards.entity_values is not None
    rows_only = dataclasses.replace(with_cards, entity_values=None)
    cards = bootstrap(with_cards, pi0=0.02, seed=5, replicates=200, budget=budget)
    rows = bootstrap(rows_only, pi0=0.02, seed=5, replicates=200, budget=budget)
    for side in ("regular", "calibrated"):
        for name, interval in getattr(rows, side).items():
            moved = getattr(cards, side)[name]
            if name in VALUE_METRICS:
                assert moved is not None, name
                assert interval is not None, name
                assert moved != interval, name
            else:
                assert moved == interval, (side, name)
    # No entities: no entity values, the row bootstrap as before (its value intervals exist).
    plain = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts)
    assert plain.entity_values is None
    assert plain.entities is None
    assert bootstrap(plain, pi0=0.02, seed=5, replicates=200).regular["value_recall"] is not None
    # A row without an entity: no entity sketch, no entity values.
    some = codes.copy()
    some[0] = np.iinfo(np.int64).min
    partial = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=some)
    assert partial.entity_values is None


def test_the_grid_takes_the_card_replicates_at_every_prior() -> None:
    scores, labels, amounts, codes = _window(4)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=codes)
    grid = PriorGrid(step=0.2, nodes_per_side=2)
    budget = Budget(review_cost=COST)
    got = bootstrap(sketch, pi0=0.02, seed=1, replicates=200, budget=budget, grid=grid)
    assert got.grid is not None
    at_pi0 = got.at_pi0(0.02)
    assert at_pi0 is not None
    for name in ("value_precision", "net_savings"):
        assert at_pi0.calibrated[name] == got.calibrated[name]
        interval = got.at_pi0(grid.priors(0.02)[-1])
        assert interval is not None
        assert interval.calibrated[name] is not None


def test_bursts_by_card_widen_the_value_intervals() -> None:
    """The point of it: a card's frauds move together, so the value metrics' intervals are
    wider than the row bootstrap's on bursty windows (bench/value_coverage.py's ``bursts``)."""
    ratios = []
    for seed in range(6):
        scores, labels, amounts, cards = bursts(np.random.default_rng([seed, 24]), 10_000)
        widths = []
        for entities in (None, cards):
            sketch = build_sketch(scores, labels, threshold=2.0, amounts=amounts, entities=entities)
            interval = bootstrap(sketch, pi0=0.005, seed=seed, replicates=300).regular
            low, high = interval["value_recall"] or (np.nan, np.nan)
            widths.append(high - low)
        ratios.append(widths[1] / widths[0])
    assert np.median(ratios) > 1.15, ratios


def test_entity_values_round_trip_pool_and_old_bytes_still_read() -> None:
    scores, labels, amounts, codes = _window(5)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=codes)
    assert CurveSketch.from_bytes(sketch.to_bytes()) == sketch
    assert CurveSketch.from_json(sketch.to_json()) == sketch
    back = CurveSketch.from_bytes(sketch.to_bytes()).entity_values
    assert back is not None
    np.testing.assert_array_equal(back.arrays(), sketch.entity_values.arrays())  # type: ignore[union-attr]
    # The same rows in another order, under other codes: the same bytes.
    order = np.random.default_rng(0).permutation(scores.size)
    again = build_sketch(
        scores[order],
        labels[order],
        threshold=THRESHOLD,
        amounts=amounts[order],
        entities=codes[order] * 3 + 11,
    )
    assert again.to_bytes() == sketch.to_bytes()
    # Bytes written before entity values existed: the same layout without flag 4.
    old = dataclasses.replace(sketch, entity_values=None).to_bytes()
    assert old[len(old) - len(sketch.to_bytes()) :] != b""  # (shorter than the new bytes)
    assert CurveSketch.from_bytes(old).entity_values is None
    with pytest.raises(InvalidInputError):
        CurveSketch.from_bytes(sketch.to_bytes()[:-8])
    with pytest.raises(InvalidInputError):
        EntityValues.of_array(np.array([2.0, 1.0]))
    # Pooled days: entity-days, their sums add up.
    other = _window(6)
    day2 = build_sketch(*other[:2], threshold=THRESHOLD, amounts=other[2], entities=other[3])
    pooled = pool_sketches([sketch, day2])
    assert pooled.entity_values is not None
    parts = [s.entity_values for s in (sketch, day2)]
    expected = sum(p.totals() for p in parts if p is not None)
    np.testing.assert_allclose(pooled.entity_values.totals(), expected, rtol=1e-12)
    assert CurveSketch.from_bytes(pooled.to_bytes()) == pooled


def test_the_priors_broadcast_gives_each_prior_the_floats_of_its_own_call() -> None:
    """CardReplicates.of takes every prior in one (G, 1) broadcast, from the curve's value
    part alone (ValueCurve); each row must be what the whole kernel calibrated to that prior
    alone gives, and its regular columns the kernel's regular ones, bit for bit (replicates
    and the window's own sums, with and without a review cost)."""
    scores, labels, amounts, codes = _window(7)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=codes)
    values = sketch.entity_values
    assert values is not None
    drawn = CardDraws.of(values, 300, np.random.default_rng(3))
    priors = [0.001, 0.013, 0.08, 0.5, 0.93]
    for cost in (COST, None):
        budgets = Budgets(review_cost=cost)
        for totals, sequential in ((drawn.totals, False), (values.totals()[None, :], True)):
            cards = CardReplicates.of(totals, THRESHOLD, priors, budgets)
            prepared = Prepared.of(
                at_threshold(totals, THRESHOLD), sequential=sequential, budgets=budgets
            )
            regular = prepared.regular()
            for name, column in cards.regular.items():
                assert column.tobytes() == regular[name].tobytes(), name
            for prior, columns in zip(priors, cards.calibrated, strict=True):
                alone = prepared.calibrated(prior)
                assert set(columns) == {"value_precision", "net_savings"}
                for name, column in columns.items():
                    assert column.dtype == alone[name].dtype
                    np.testing.assert_array_equal(column, alone[name])


def test_replicates_and_the_window_in_one_batch_keep_each_rows_floats() -> None:
    """use_cards takes the replicates' value metrics and the window's in one CardReplicates
    call, and net savings' standard errors of both in one call: each row must be what a call
    of its own gives, bit for bit."""
    scores, labels, amounts, codes = _window(8)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=codes)
    values = sketch.entity_values
    assert values is not None
    drawn = CardDraws.of(values, 300, np.random.default_rng(4))
    window = values.totals()[None, :]
    priors = [0.001, 0.013, 0.08, 0.5]
    budgets = Budgets(review_cost=COST)
    both = CardReplicates.of(np.concatenate([drawn.totals, window]), THRESHOLD, priors, budgets)
    for part, alone in (
        (slice(None, 300), CardReplicates.of(drawn.totals, THRESHOLD, priors, budgets)),
        (slice(300, None), CardReplicates.of(window, THRESHOLD, priors, budgets)),
    ):
        rows = both.rows(part)
        for name, column in rows.regular.items():
            assert column.tobytes() == alone.regular[name].tobytes(), name
        for at, at_alone in zip(rows.calibrated, alone.calibrated, strict=True):
            for name, column in at.items():
                assert column.tobytes() == at_alone[name].tobytes(), name
    at_priors: list[float | None] = [None, *priors]
    errors = standard_error(
        np.concatenate([drawn.totals, window]),
        np.concatenate([drawn.spread, values.spread()[None, :, :]]),
        COST,
        at_priors,
    )
    apart = standard_error(drawn.totals, drawn.spread, COST, at_priors)
    assert errors[:, :300].tobytes() == apart.tobytes()
    own = standard_error(window, values.spread()[None, :, :], COST, at_priors)
    assert errors[:, 300:].tobytes() == own.tobytes()
