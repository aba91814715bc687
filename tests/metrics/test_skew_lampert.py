"""Printed numbers of Lampert & Gancarski (2014), "The bane of skew", reproduced.

Each test names the table, equation or section and the printed value it reproduces.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from app.metrics.skew import (
    integrated_auc_pr,
    integrated_precision,
    min_integrated_auc,
    normalised_integrated_auc,
    precision_at_skew,
    skew_range_from_history,
    temporal_precision,
    transform_precision,
)

# Table 2: confusion matrices (tp, fp, fn, tn) of one algorithm (TPR 0.8, FPR 0.3) at four skews,
# with the printed precisions.
TABLE_2 = {
    "a": ((73, 276, 18, 643), 0.21),
    "b": ((200, 228, 50, 532), 0.47),
    "c": ((408, 150, 102, 350), 0.73),
    "d": ((735, 27, 184, 64), 0.97),
}


def _skew_and_precision(name: str) -> tuple[float, float]:
    (tp, fp, fn, tn), _ = TABLE_2[name]
    return (tp + fn) / (tp + fp + fn + tn), tp / (tp + fp)


@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_table_2_precisions_021_047_073(name: str) -> None:
    """Lampert Table 2: precision of matrices a, b, c is 0.21, 0.47, 0.73 (two decimals)."""
    _, printed = TABLE_2[name]
    _, precision = _skew_and_precision(name)
    assert round(precision, 2) == printed


def test_table_2_matrix_d_prints_097_but_its_counts_give_096() -> None:
    """Lampert Table 2 d) prints 0.97, which does not reproduce.

    Its counts give 735 / 762 = 0.9646, and eq. (9) with the stated TPR 0.8, FPR 0.3 at
    pi = 0.91 gives 0.9642: both round to 0.96. The printed 0.97 is a rounding slip in the paper.
    """
    pi, precision = _skew_and_precision("d")
    assert precision == pytest.approx(0.9646, abs=5e-5)
    assert round(float(precision_at_skew(0.8, 0.3, 0.91)), 2) == 0.96
    assert round(precision, 2) == 0.96
    assert pi == pytest.approx(0.91, abs=5e-4)


@pytest.mark.parametrize("source", ["a", "b", "c", "d"])
@pytest.mark.parametrize("target", ["a", "b", "c"])
def test_eq_3_moves_table_2_precisions_between_skews(source: str, target: str) -> None:
    """Lampert eq. (3): any Table 2 precision moved to another matrix's skew gives its printed
    precision (0.21 / 0.47 / 0.73 to two decimals)."""
    pi_source, precision = _skew_and_precision(source)
    pi_target, _ = _skew_and_precision(target)
    moved = float(transform_precision(precision, pi_source, pi_target))
    assert round(moved, 2) == TABLE_2[target][1]


def test_eq_3_is_the_identity_at_the_same_skew_and_inverts_itself() -> None:
    """Lampert eq. (3): P_pi -> P_pi is the identity and pi -> pi' -> pi returns the input."""
    precision = np.linspace(0.0, 1.0, 11)
    assert np.allclose(transform_precision(precision, 0.3, 0.3), precision, atol=1e-15)
    there = transform_precision(precision, 0.3, 0.01)
    assert np.allclose(transform_precision(there, 0.01, 0.3), precision, atol=1e-13)


def test_bacteria_example_fixed_skew_precision_07273() -> None:
    """Lampert section 4.2: TPR 0.8, FPR 0.2 at pi = 0.4 (N = 10,000, Np = 4,000) gives 0.7273."""
    assert float(precision_at_skew(0.8, 0.2, 0.4)) == pytest.approx(0.7273, abs=5e-5)
    tp, fp = 0.8 * 4000, 0.2 * 6000
    assert round(tp / (tp + fp), 4) == 0.7273


def test_bacteria_example_temporal_precision_04689() -> None:
    """Lampert eq. (4), section 4.2: pi'(t) = 2^t / 10,000 capped at 1, T = 20 gives 0.4689.

    The continuous integral gives 0.468919; a unit-grid sum would give 0.444-0.494 instead
    (t = 0..19: 0.4438, t = 1..20: 0.4938), so the printed value is the integral.
    """
    trajectory = lambda t: np.minimum(2.0**t / 10_000, 1.0)  # noqa: E731
    value = float(temporal_precision(0.8, 0.2, trajectory, 20.0))
    assert round(value, 4) == 0.4689
    # The same integral split analytically at the cap t* = log2(10^4): precision 1 after it.
    cap = np.log2(10_000)
    before, _ = quad(lambda t: float(precision_at_skew(0.8, 0.2, 2.0**t / 1e4)), 0, cap)
    assert value == pytest.approx((before + (20.0 - cap)) / 20.0, abs=1e-12)


def test_temporal_random_classifier_is_the_mean_skew() -> None:
    """Lampert Theorem 5 / eq. (15): a random classifier (TPR = FPR) scores (1/T) int pi'(t)."""
    trajectory = lambda t: 0.2 + 0.15 * np.sin(t)  # noqa: E731
    value = temporal_precision([0.1, 0.5, 1.0], [0.1, 0.5, 1.0], trajectory, 7.0)
    expected = 0.2 + 0.15 * (1.0 - np.cos(7.0)) / 7.0
    assert np.allclose(value, expected, atol=1e-12)


@pytest.mark.parametrize(
    ("pi_lo", "pi_hi", "printed"), [(0.0, 0.5, 0.1424), (0.3, 0.5, 0.2349), (0.6, 0.9, 0.5471)]
)
def test_fig_9_minimum_achievable_areas(pi_lo: float, pi_hi: float, printed: float) -> None:
    """Lampert eq. (20), Fig. 9: AUCPR_MIN(0, .5) = 0.1424, (.3, .5) = 0.2349, (.6, .9) = 0.5471."""
    assert round(min_integrated_auc(pi_lo, pi_hi), 4) == printed


@pytest.mark.parametrize(("pi_lo", "pi_hi"), [(0.0, 0.5), (0.3, 0.5), (0.6, 0.9), (0.0, 1.0)])
def test_eq_20_equals_the_area_under_the_worst_curve(pi_lo: float, pi_hi: float) -> None:
    """Lampert Theorem 9: eq. (20) is the area under R -> P-bar(TPR = R, FPR = 1) (eq. 19)."""

    def worst(recall: float) -> float:
        return float(integrated_precision(recall, 1.0, pi_lo, pi_hi)) if recall > 0 else 0.0

    area, _ = quad(worst, 0.0, 1.0, epsabs=1e-13)
    assert min_integrated_auc(pi_lo, pi_hi) == pytest.approx(area, abs=1e-10)


def test_eq_21_normalised_area_is_0_for_the_worst_and_1_for_a_perfect_curve() -> None:
    """Lampert eq. (21): (AUC - AUC_min) / (1 - AUC_min) maps the worst area to 0, perfect to 1."""
    perfect = integrated_auc_pr(([1.0], [0.0]), 0.0, 0.5)
    assert perfect == 1.0
    assert normalised_integrated_auc(perfect, 0.0, 0.5) == 1.0
    assert normalised_integrated_auc(min_integrated_auc(0.0, 0.5), 0.0, 0.5) == 0.0


@pytest.mark.parametrize(("pi_lo", "pi_hi"), [(0.0, 0.5), (0.3, 0.5), (0.6, 0.9), (0.0, 1.0)])
def test_random_classifier_integrated_precision_is_the_mid_skew(pi_lo: float, pi_hi: float) -> None:
    """Lampert Theorem 10 / eq. (22): TPR = FPR gives P-bar = (pi1' + pi2') / 2 at every recall,
    so the random classifier's AUC-P-bar-R (Corollary 3) is (pi1' + pi2') / 2 too."""
    rates = np.array([1e-9, 0.01, 0.3, 0.7, 1.0])
    value = integrated_precision(rates, rates, pi_lo, pi_hi)
    assert np.allclose(value, (pi_lo + pi_hi) / 2, atol=1e-14)
    assert integrated_auc_pr((rates, rates), pi_lo, pi_hi) == pytest.approx(
        (pi_lo + pi_hi) / 2, abs=1e-14
    )


def test_section_5_1_skew_range_from_the_eye_fundus_skews() -> None:
    """Lampert section 5.1 prints mean 0.129, std 0.035 and limits (0.023, 0.235) for the seven
    eye-fundus skews of Table 4. Those printed skews (0.109, 0.076, 0.184, 0.168, 0.090, 0.126,
    0.123) average 0.1251, not 0.129, and their std is 0.0363 (population) or 0.0392 (sample):
    the printed statistics do not reproduce from Table 4 (probably taken from unrounded data).
    What does reproduce: mean +- 3 std of the printed statistics gives the printed limits.
    """
    table_4 = [0.109, 0.076, 0.184, 0.168, 0.090, 0.126, 0.123]
    lo, hi = skew_range_from_history(table_4)
    mean, std = float(np.mean(table_4)), float(np.std(table_4))
    assert (lo, hi) == pytest.approx((mean - 3 * std, mean + 3 * std), abs=1e-15)
    assert (round(lo, 3), round(hi, 3)) == (0.016, 0.234)
    printed_mean, printed_std = 0.129, 0.035
    assert abs(printed_mean - 3 * printed_std - 0.023) <= 1.5e-3
    assert abs(printed_mean + 3 * printed_std - 0.235) <= 1.5e-3


def test_skew_range_is_clipped_to_the_unit_interval() -> None:
    """Lampert section 5.1 requires 0 <= pi1' < pi2' <= 1: a spread past an end is clipped."""
    low_side = [0.01, 0.02, 0.5]
    lo, hi = skew_range_from_history(low_side)
    assert lo == 0.0
    assert hi == pytest.approx(np.mean(low_side) + 3 * np.std(low_side), abs=1e-15)
    assert skew_range_from_history([0.99, 0.5, 0.98])[1] == 1.0
