"""The alert-budget metrics (issue 24) against direct computations on the rows.

precision_at_k is the Worldline/ULB handbook's P@k (chapter 4: the precision among the k
highest-scored transactions of the day, k what the investigators can check), with a tie at the
k-th score cut in proportion: the mean over the orders that break the tie, computed here by
brute force. precision_at_k_max is the handbook's achievable maximum, alerts the rows at or
above the threshold. The calibrated values are checked against windows resampled to pi0.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics import Budget, budget_share, build_sketch, evaluate, evaluate_sketch
from app.metrics.types import Float64Array, Int64Array
from tests.support.top_k import top_k_precision


def _window(
    rng: np.random.Generator, n: int, pi: float, ties: bool
) -> tuple[Float64Array, Int64Array]:
    labels = (rng.random(n) < pi).astype(np.int64)
    scores: Float64Array = rng.normal(size=n) + 1.5 * labels
    rounded: Float64Array = np.round(scores, 1)
    return (rounded if ties else scores), labels


def test_the_handbooks_precision_at_k_on_a_worked_example() -> None:
    """Ten transactions of a day, k = 3: the three highest scores hold two frauds."""
    scores = np.array([0.95, 0.1, 0.8, 0.3, 0.7, 0.2, 0.05, 0.6, 0.4, 0.15])
    labels = np.array([1, 0, 0, 0, 1, 0, 0, 1, 0, 0])
    result = evaluate(scores, labels, threshold=0.5, pi0=0.3, budget=Budget(share=3 / 10))
    assert result.regular["precision_at_k"] == pytest.approx(2 / 3, abs=1e-15)
    assert result.regular["precision_at_k_max"] == 1.0  # three frauds: all of k could be
    assert result.regular["alerts"] == 4.0  # 0.95, 0.8, 0.7, 0.6
    # pi0 = pi: calibrated equals regular.
    assert result.calibrated["precision_at_k"] == pytest.approx(2 / 3, abs=1e-12)
    # A budget larger than the frauds: the achievable maximum is frauds / k, reached here
    # (0.95, 0.8, 0.7, 0.6, 0.4 hold all three frauds).
    wide = evaluate(scores, labels, threshold=0.5, pi0=0.3, budget=Budget(share=5 / 10))
    assert wide.regular["precision_at_k"] == pytest.approx(3 / 5, abs=1e-15)
    assert wide.regular["precision_at_k_max"] == pytest.approx(3 / 5, abs=1e-15)


@pytest.mark.parametrize("seed", range(40))
def test_precision_at_k_equals_the_direct_computation(seed: int) -> None:
    """Random windows with ties, tiny windows, budgets beyond the window."""
    rng = np.random.default_rng([24, seed])
    n = int(rng.choice([1, 2, 3, 5, 12, 40, 300, 2_000]))
    scores, labels = _window(rng, n, float(rng.choice([0.05, 0.3, 0.6])), ties=seed % 2 == 0)
    capacity = int(rng.integers(1, max(2, int(1.3 * n))))
    threshold = float(rng.choice([-1.0, 0.0, 0.5, 3.0]))
    share = budget_share(capacity, n)
    result = evaluate_sketch(
        build_sketch(scores, labels, threshold=threshold), pi0=0.2, budget=Budget(share=share)
    )
    k = min(capacity, n)
    assert result.regular["precision_at_k"] == pytest.approx(
        top_k_precision(scores, labels, k), abs=1e-12
    )
    assert result.regular["precision_at_k_max"] == pytest.approx(
        min(int(labels.sum()), k) / k, abs=1e-12
    )
    assert result.regular["alerts"] == float((scores >= threshold).sum())
    assert "regular.precision_at_k" not in result.undefined


def test_without_a_budget_the_top_k_metrics_are_undefined_with_the_reason() -> None:
    scores, labels = _window(np.random.default_rng(3), 100, 0.2, ties=False)
    result = evaluate(scores, labels, threshold=1.0, pi0=0.1)
    for variant in ("regular", "calibrated"):
        for name in ("precision_at_k", "precision_at_k_max"):
            assert getattr(result, variant)[name] is None
            assert "alert_capacity" in result.undefined[f"{variant}.{name}"]
    assert result.regular["alerts"] is not None
    assert budget_share(None, 100) is None
    assert budget_share(250, 100) == 1.0


def test_one_class_windows_keep_the_regular_values_and_explain_the_calibrated() -> None:
    result = evaluate(
        [0.1, 0.9, 0.5], [0, 0, 0], threshold=0.5, pi0=0.1, budget=Budget(share=1 / 3)
    )
    assert result.regular["precision_at_k"] == 0.0
    assert result.regular["precision_at_k_max"] == 0.0
    assert result.calibrated["precision_at_k"] is None
    assert "both classes" in result.undefined["calibrated.precision_at_k"]


@pytest.mark.parametrize(("pi0", "ties"), [(0.01, False), (0.05, True), (0.2, False)])
def test_calibrated_values_are_the_mean_over_windows_resampled_to_pi0(
    pi0: float, ties: bool
) -> None:
    """Draw windows of m rows with m * pi0 frauds from the window's rows (with replacement):
    the mean precision among their top m * share rows, and their mean alerts per row, match
    the calibrated values within 4 standard errors."""
    rng = np.random.default_rng([24, 7, int(ties)])
    scores, labels = _window(rng, 4_000, 0.08, ties=ties)
    share, threshold = 0.02, 1.2
    result = evaluate(scores, labels, threshold=threshold, pi0=pi0, budget=Budget(share=share))
    pos, neg = scores[labels == 1], scores[labels == 0]
    m = 20_000
    frauds = round(pi0 * m)
    k = round(share * m)
    precisions, alert_rates = [], []
    for _ in range(300):
        drawn_pos = rng.choice(pos, frauds)
        drawn_neg = rng.choice(neg, m - frauds)
        s = np.concatenate([drawn_pos, drawn_neg])
        y = np.concatenate([np.ones(frauds, np.int64), np.zeros(m - frauds, np.int64)])
        precisions.append(top_k_precision(s, y, k))
        alert_rates.append(float((s >= threshold).mean()))
    for name, draws, value in [
        ("precision_at_k", precisions, result.calibrated["precision_at_k"]),
        ("alerts", alert_rates, (result.calibrated["alerts"] or 0.0) / result.n),
    ]:
        mean, se = float(np.mean(draws)), float(np.std(draws, ddof=1) / np.sqrt(len(draws)))
        assert value is not None
        assert abs(mean - value) <= 4 * se + 1e-3, (name, mean, value, se)
