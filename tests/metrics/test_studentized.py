"""Net savings' studentized intervals from the card bootstrap (app/metrics/_studentized.py).

Checked against what they are made of, written out independently: the kernel's net savings
(its gradient by finite differences), each replicate's weighted sums of the cards' products
(from the same Poisson draws), and the bootstrap-t interval computed directly from the cards'
sums, with each card's influence taken by differencing net savings in that card's weight.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics import Budget, bootstrap, build_sketch, evaluate_sketch
from app.metrics._card_bootstrap import CardDraws, CardReplicates
from app.metrics._kernel import Budgets
from app.metrics._poisson_inversion import poisson_inverted
from app.metrics._resampling import AmountSpread
from app.metrics._studentized import row_sums, standard_error, t_offsets, window_sums
from app.metrics.prior_grid import PriorGrid
from app.metrics.result import counts_of
from app.metrics.sketch_entity_values import SPREAD, EntityValues
from app.metrics.types import Float64Array as Floats

THRESHOLD = 2.0
COST = 5.0
LEVEL = 0.95


def _values(seed: int, *, legit_cards: bool) -> EntityValues:
    """About 25 fraud cards of 1 + Poisson(2) frauds with lognormal amounts, in 3,000 rows;
    legitimate rows on the fraud cards only (no normal part), or each a card of its own."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(3000) < 0.025).astype(np.int64)
    scores = rng.normal(2.5 * labels, 1.0)
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    frauds = np.flatnonzero(labels)
    cards = np.arange(3000, dtype=np.int64) + 10_000
    cards[frauds] = np.arange(frauds.size) // 3
    if not legit_cards:
        cards[labels == 0] = rng.integers(0, frauds.size // 3, 3000 - frauds.size)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=cards)
    assert sketch.entity_values is not None
    return sketch.entity_values


def _net_savings(sums: Floats, pi0: float | None) -> Floats:
    """The kernel's net savings of the seven sums per row (CardReplicates), regular or at pi0."""
    got = CardReplicates.of(
        sums, THRESHOLD, [] if pi0 is None else [pi0], Budgets(review_cost=COST)
    )
    found = got.regular if pi0 is None else got.calibrated[0]
    return np.asarray(found["net_savings"], dtype=np.float64)


@pytest.mark.parametrize("pi0", [None, 0.005, 0.05])
def test_the_standard_error_is_the_kernels_gradient(pi0: float | None) -> None:
    """One card: its spread is the outer product of its sums, so the error is |gradient . z|;
    the gradient taken by finite differences of the kernel's own net savings."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        sums = np.array([rng.uniform(5, 40), 0, rng.uniform(1e2, 1e4), 0, 0, 0, 0])
        sums[1] = rng.uniform(0, sums[0])
        sums[3] = sums[2] * 1.5
        sums[4] = rng.uniform(500, 5000)
        sums[5] = rng.uniform(0, 0.1 * sums[4])
        direction = rng.uniform(0.0, 3.0, 7)
        direction[[3, 6]] = 0.0
        z = direction[list(SPREAD)]
        step = 1e-7 * max(1.0, float(np.abs(sums).max()))
        ahead = _net_savings((sums + step * direction)[None, :], pi0)
        behind = _net_savings((sums - step * direction)[None, :], pi0)
        slope = float((ahead - behind)[0]) / (2 * step)
        error = standard_error(sums[None, :], np.outer(z, z)[None, :, :], COST, [pi0])
        assert float(error[0, 0]) == pytest.approx(abs(slope), rel=1e-5)


def test_the_standard_errors_of_many_priors_are_those_of_each_alone() -> None:
    """One call at every prior of a grid (and the regular one) gives each prior's own
    errors, row by row: the call shares the quadratic forms between priors."""
    rng = np.random.default_rng(2)
    sums = rng.uniform(1.0, 50.0, (40, 7))
    sums[0, 0] = 0.0  # a replicate that drew no fraud: undefined when calibrated
    root = rng.normal(size=(40, 5, 5))
    spread = root @ root.transpose(0, 2, 1)
    priors: list[float | None] = [0.002, None, 0.01, 0.3]
    together = standard_error(sums, spread, COST, priors)
    for g, pi0 in enumerate(priors):
        alone = standard_error(sums, spread, COST, [pi0])[0]
        np.testing.assert_allclose(together[g], alone, rtol=1e-13)
    assert np.isnan(together[0, 0])
    assert np.isfinite(together[1, 0])


def test_each_replicates_spread_is_its_cards_products_weighted_by_their_counts() -> None:
    values = _values(2, legit_cards=False)
    assert values.legit_count == 0  # every entity holds a fraud: no normal part
    drawn = CardDraws.of(values, 300, np.random.default_rng(7))
    np.testing.assert_array_equal(drawn.totals, values.draw(300, np.random.default_rng(7)))
    weights = poisson_inverted(1.0, (300, values.fraud.shape[0]), np.random.default_rng(7))
    z = values.fraud[:, list(SPREAD)]
    direct = np.einsum("bi,ij,ik->bjk", weights, z, z)
    np.testing.assert_allclose(drawn.spread, direct, rtol=1e-12)
    np.testing.assert_allclose(values.spread(), z.T @ z, rtol=1e-12)
    # Entities without a fraud add their products' sums, as the normal part's covariance.
    with_legit = _values(2, legit_cards=True)
    assert with_legit.legit_count > 2000
    own = with_legit.fraud[:, list(SPREAD)]
    expected = own.T @ own
    expected[3:, 3:] += with_legit.legit_products[:2, :2]
    np.testing.assert_allclose(with_legit.spread(), expected, rtol=1e-12)


@pytest.mark.parametrize("pi0", [None, 0.01])
def test_the_interval_is_the_bootstrap_t_of_the_cards_sums(pi0: float | None) -> None:
    """Written out: each replicate's net savings from the Poisson-weighted sums, its variance
    the weighted sum of the cards' squared influences (net savings' change per unit of a card's
    weight, by finite differences), t = (replicate - window) / its error, and the interval
    ``[value - t_97.5 se, value - t_2.5 se]``."""
    values = _values(3, legit_cards=False)
    replicates = 400
    drawn = CardDraws.of(values, replicates, np.random.default_rng(5))
    priors = [] if pi0 is None else [pi0]
    cards = CardReplicates.of(drawn.totals, THRESHOLD, priors, Budgets(review_cost=COST))
    point = CardReplicates.of(
        values.totals()[None, :], THRESHOLD, priors, Budgets(review_cost=COST)
    )
    regular, calibrated = drawn.net_savings_offsets((cards, point), COST, priors, LEVEL)
    got = regular if pi0 is None else calibrated[0]
    assert got is not None

    weights = poisson_inverted(1.0, (replicates, values.fraud.shape[0]), np.random.default_rng(5))

    def variance(w: Floats) -> float:
        eps = 1e-4
        base = w @ values.fraud
        influence = [
            (
                _net_savings((base + eps * card)[None, :], pi0)
                - _net_savings((base - eps * card)[None, :], pi0)
            )[0]
            / (2 * eps)
            for card in values.fraud
        ]
        return float(np.sum(w * np.square(influence)))

    window = float(_net_savings(values.totals()[None, :], pi0)[0])
    replicated = _net_savings(weights @ values.fraud, pi0)
    t = [(r - window) / np.sqrt(variance(w)) for r, w in zip(replicated, weights, strict=True)]
    error = np.sqrt(variance(np.ones(values.fraud.shape[0])))
    low, high = np.quantile(t, [0.025, 0.975])
    assert got == pytest.approx((-high * error, -low * error), rel=1e-5)
    # Skewed money: the interval reaches further above the value than below it.
    assert got[1] > -got[0] > 0


def test_the_rows_sums_are_the_windows_rows_each_its_own_unit() -> None:
    """Without cards every row is a unit: the window's spread is the sum over its rows of
    z z' (z: a fraud's (1, flagged, flagged amount), a legitimate row's (1, flagged)), written
    out row by row; a replicate that draws every entry once is the window (one fraud an entry,
    continuous scores, so the entry's mean square is the fraud's square)."""
    rng = np.random.default_rng(6)
    labels = (rng.random(2000) < 0.02).astype(np.int64)
    scores = rng.normal(2.5 * labels, 1.0)
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts)
    flagged = (scores >= THRESHOLD).astype(float)
    fraud = labels == 1
    z = np.zeros((2000, 5))
    z[fraud, 0], z[fraud, 1], z[fraud, 2] = 1.0, flagged[fraud], (amounts * flagged)[fraud]
    z[~fraud, 3], z[~fraud, 4] = 1.0, flagged[~fraud]
    window, spread = window_sums(sketch)
    np.testing.assert_allclose(window[0][list(SPREAD)], z.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(spread[0], z.T @ z, rtol=1e-12)
    counts = counts_of(sketch)
    once, once_spread = row_sums(counts, AmountSpread.of(sketch, counts))  # type: ignore[arg-type]
    np.testing.assert_allclose(once, window, rtol=1e-6)  # float32 moments
    np.testing.assert_allclose(once_spread, spread, rtol=1e-6)


def test_the_cards_net_savings_interval_is_studentized_around_its_value() -> None:
    """Through the bootstrap: regular and calibrated intervals hold the window's value, are
    wider above than below (a few large frauds), and the grid holds them at pi0."""
    rng = np.random.default_rng(4)
    labels = (rng.random(4000) < 0.01).astype(np.int64)
    scores = rng.normal(2.5 * labels, 1.0)
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    sketch = build_sketch(
        scores, labels, threshold=THRESHOLD, amounts=amounts, entities=np.arange(4000)
    )
    budget = Budget(review_cost=COST)
    grid = PriorGrid(step=0.2, nodes_per_side=2)
    got = bootstrap(sketch, pi0=0.005, seed=3, replicates=400, budget=budget, grid=grid)
    value = evaluate_sketch(sketch, pi0=0.005, budget=budget)
    for side in ("regular", "calibrated"):
        interval = getattr(got, side)["net_savings"]
        centre = getattr(value, side)["net_savings"]
        assert interval is not None
        assert interval[0] < centre < interval[1]
        assert interval[1] - centre > centre - interval[0], side
    moved = got.at_pi0(0.005)
    assert moved is not None
    assert moved.calibrated["net_savings"] == got.calibrated["net_savings"]


@pytest.mark.parametrize("frauds", [0, 1, 2])
@pytest.mark.parametrize("cards", [False, True])
def test_windows_with_almost_no_fraud_get_an_interval_or_none(frauds: int, cards: bool) -> None:
    """No fraud card to weight (or one or two): regular net savings (the review cost of the
    alerts, and the few frauds caught) has an interval holding its value; calibrated is
    undefined without frauds, and with one or two more than 2.5% of the replicates draw none
    (e^-1, e^-2), so it has no interval."""
    rng = np.random.default_rng(frauds)
    labels = np.zeros(500, dtype=np.int64)
    labels[:frauds] = 1
    scores = rng.normal(2.5 * labels, 1.0)
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    entities = np.arange(500) if cards else None
    sketch = build_sketch(scores, labels, threshold=THRESHOLD, amounts=amounts, entities=entities)
    budget = Budget(review_cost=COST)
    got = bootstrap(sketch, pi0=0.01, seed=1, replicates=200, budget=budget)
    value = evaluate_sketch(sketch, pi0=0.01, budget=budget)
    interval, centre = got.regular["net_savings"], value.regular["net_savings"]
    assert centre is not None
    assert interval is not None
    assert interval[0] <= centre <= interval[1]
    assert got.calibrated["net_savings"] is None
    assert (value.calibrated["net_savings"] is None) == (frauds == 0)


def test_t_offsets_when_nothing_varies_or_too_little_is_defined() -> None:
    drawn = np.array([[1.0, 2.0, 3.0, 4.0]] * 4)
    errors = np.array([[1.0] * 4, [1.0] * 4, [1.0, 0.0, 0.0, 1.0], [1.0] * 4])
    found = t_offsets(drawn, errors, (np.full(4, 2.0), np.array([0.0, np.nan, 1.0, 1.0])), LEVEL)
    assert found[0] == (0.0, 0.0)  # nothing varies
    assert found[1] is None  # the window's error undefined
    assert found[2] is None  # half the replicates without a t value
    low, high = np.quantile([-1.0, 0.0, 1.0, 2.0], [0.025, 0.975])
    assert found[3] == pytest.approx((-high, -low))
    one_short = np.ones((1, 100))
    one_short[0, 0] = np.nan  # 1% undefined: within the 2.5% a tail allows
    window = (np.array([50.0]), np.array([1.0]))
    assert t_offsets(np.arange(100.0)[None, :], one_short, window, LEVEL)[0] is not None
