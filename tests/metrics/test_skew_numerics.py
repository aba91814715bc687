"""The numerical building blocks of app.metrics.skew checked against scipy and closed forms.

Lampert & Gancarski (2014) eq. (7) (integrated precision, in closed form) and eq. (4) (temporal
precision, by app.metrics._quadrature) are computed without scipy's quadrature (measured faster for
many integrands at once); these tests cross-check them with it. Eq. (20) uses scipy's dilogarithm.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.integrate import quad

from app.metrics._quadrature import GAUSS_WEIGHTS, KRONROD_WEIGHTS, NODES, integrate
from app.metrics.skew import (
    average_precision_at_skew,
    integrated_auc_pr,
    integrated_pr_curve,
    integrated_precision,
    min_integrated_auc,
    precision_at_skew,
    temporal_precision,
    transform_precision,
)


def test_gauss_kronrod_rule_is_exact_for_polynomials() -> None:
    """G7 nodes/weights equal numpy's Gauss-Legendre; K15 integrates degree <= 22 exactly."""
    gauss_nodes, gauss_weights = np.polynomial.legendre.leggauss(7)
    used = GAUSS_WEIGHTS > 0
    assert np.allclose(NODES[used], gauss_nodes, atol=1e-15)
    assert np.allclose(GAUSS_WEIGHTS[used], gauss_weights, atol=1e-15)
    for degree in range(23):
        exact = 2.0 / (degree + 1) if degree % 2 == 0 else 0.0
        assert float(np.dot(KRONROD_WEIGHTS, NODES**degree)) == pytest.approx(exact, abs=1e-14)


def test_adaptive_quadrature_resolves_kinks_and_peaks() -> None:
    """Adaptive bisection: |x - 0.3| (a kink) and a narrow Lorentzian peak to about 1e-12."""
    values = integrate(
        lambda x: np.stack([np.abs(x - 0.3), 1.0 / (1.0 + ((x - 0.7) / 1e-3) ** 2)], axis=1),
        0.0,
        1.0,
    )
    peak = 1e-3 * (np.arctan(0.3 / 1e-3) + np.arctan(0.7 / 1e-3))
    assert values[0] == pytest.approx(0.3**2 / 2 + 0.7**2 / 2, abs=1e-12)
    assert values[1] == pytest.approx(peak, abs=1e-12)


def _scipy_integrated_precision(tpr: float, fpr: float, lo: float, hi: float) -> float:
    # Break points around the transition p ~ FPR / (TPR + FPR), which is sharp for FPR << TPR.
    centre = fpr / (tpr + fpr)
    points = [q for q in (centre * 1e-2, centre, centre * 1e2) if lo < q < hi]
    value, _ = quad(
        lambda p: p * tpr / (p * tpr + (1 - p) * fpr),
        lo,
        hi,
        points=points or None,
        epsabs=1e-14,
        epsrel=1e-13,
        limit=500,
    )
    return float(value / (hi - lo))


@pytest.mark.parametrize(
    ("tpr", "fpr"),
    [(0.8, 0.3), (0.3, 0.8), (0.5, 0.5 + 1e-9), (0.5, 0.5 - 1e-7), (1.0, 1e-6), (1e-6, 1.0)],
)
@pytest.mark.parametrize(("lo", "hi"), [(0.0, 0.5), (0.001, 0.01), (0.6, 1.0), (0.0, 1.0)])
def test_eq_7_closed_form_matches_numerical_integration(
    tpr: float, fpr: float, lo: float, hi: float
) -> None:
    """Lampert eq. (7) in closed form equals scipy's quadrature to 1e-12, also as TPR -> FPR."""
    value = float(integrated_precision(tpr, fpr, lo, hi))
    assert value == pytest.approx(_scipy_integrated_precision(tpr, fpr, lo, hi), abs=1e-12)


def test_eq_7_extreme_rates_stay_finite_without_warnings() -> None:
    """FPR 1e-300 against TPR 1 (u ~ 1e300 in the closed form) gives ~1, and the reverse ~0."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = integrated_precision([1.0, 1e-300], [1e-300, 1.0], 0.0, 1.0)
    assert value[0] == pytest.approx(1.0, abs=1e-12)
    assert value[1] == pytest.approx(0.0, abs=1e-12)


def test_eq_7_closed_form_equals_quadrature_on_random_rates() -> None:
    """Eq. (7) closed form vs adaptive quadrature (uniform weight) on 40 log-uniform rate pairs
    in [1e-9, 1] (a fifth with TPR ~ FPR) and several ranges: both closed-form branches agree
    with the quadrature to 1e-12."""
    rng = np.random.default_rng(2)
    tpr = 10.0 ** rng.uniform(-9, 0, 40)
    fpr = np.where(rng.random(40) < 0.2, tpr * (1 - 1e-9), 10.0 ** rng.uniform(-9, 0, 40))
    for lo, hi in ((0.0, 1.0), (0.0, 0.001), (0.2, 0.21), (0.5, 1.0)):
        closed = integrated_precision(tpr, fpr, lo, hi)
        numeric = integrated_precision(tpr, fpr, lo, hi, weight=np.ones_like)
        assert np.allclose(closed, numeric, rtol=0, atol=1e-12)


def test_eq_20_with_a_single_skew_is_boyds_minimum_area() -> None:
    """Lampert eq. (20) as pi1' -> pi2' = pi tends to Boyd et al.'s 1 + (1 - pi) ln(1 - pi) / pi."""
    for pi in (0.001, 0.2, 0.7):
        boyd = 1.0 + (1.0 - pi) * np.log1p(-pi) / pi
        assert min_integrated_auc(pi, pi) == pytest.approx(boyd, abs=1e-15)
        assert min_integrated_auc(pi - 1e-5, pi + 1e-5) == pytest.approx(boyd, abs=1e-9)
    assert min_integrated_auc(0.0, 0.0) == 0.0
    assert min_integrated_auc(1.0, 1.0) == 1.0


def test_eq_7_edge_rates_and_degenerate_range() -> None:
    """FPR = 0 gives 1, TPR = 0 gives 0, pi_lo = pi_hi gives the fixed-skew precision (eq. 9)."""
    assert float(integrated_precision(0.4, 0.0, 0.0, 0.5)) == 1.0
    assert float(integrated_precision(0.0, 0.4, 0.0, 1.0)) == 0.0
    assert float(integrated_precision(0.8, 0.3, 0.25, 0.25)) == float(
        precision_at_skew(0.8, 0.3, 0.25)
    )
    with pytest.raises(ValueError, match="tpr = fpr = 0"):
        integrated_precision([0.5, 0.0], [0.1, 0.0], 0.0, 0.5)
    with pytest.raises(ValueError, match="must not exceed"):
        integrated_precision(0.5, 0.1, 0.6, 0.5)


def test_weighted_eq_7_is_normalised_by_the_weight_integral() -> None:
    """Lampert section 4.3.2/5.1: a Gaussian skew weight (mean 0.129, std 0.035, as for the
    eye-fundus data) over [0, 1]; a uniform weight reproduces the unweighted closed form."""
    tpr, fpr = np.array([0.2, 0.6, 0.95]), np.array([0.01, 0.1, 0.5])

    def gaussian(p: np.ndarray) -> np.ndarray:
        return np.asarray(np.exp(-0.5 * ((p - 0.129) / 0.035) ** 2))

    weighted = integrated_precision(tpr, fpr, 0.0, 1.0, weight=gaussian)
    norm, _ = quad(lambda p: float(gaussian(np.array(p))), 0, 1, epsabs=1e-14)
    for i in range(3):
        num, _ = quad(
            lambda p, i=i: (
                float(gaussian(np.array(p))) * float(precision_at_skew(tpr[i], fpr[i], p))
            ),
            0,
            1,
            epsabs=1e-14,
        )
        assert weighted[i] == pytest.approx(num / norm, abs=1e-11)
    uniform = integrated_precision(tpr, fpr, 0.1, 0.4, weight=lambda p: 3.0 * np.ones_like(p))
    assert np.allclose(uniform, integrated_precision(tpr, fpr, 0.1, 0.4), atol=1e-12)


def test_temporal_precision_with_constant_skew_is_fixed_precision() -> None:
    """Lampert eq. (4) with pi'(t) = pi is eq. (9) at pi, for every operating point."""
    tpr, fpr = np.array([0.1, 0.5, 0.9]), np.array([0.05, 0.2, 0.6])
    value = temporal_precision(tpr, fpr, lambda t: np.full_like(t, 0.07), 3.0)
    assert np.allclose(value, precision_at_skew(tpr, fpr, 0.07), atol=1e-14)


def test_temporal_precision_rejects_scalar_only_trajectories() -> None:
    """pi_of_t must be vectorised: a trajectory returning one number for many times is refused."""
    with pytest.raises(ValueError, match="same shape"):
        temporal_precision(0.8, 0.2, lambda t: np.float64(0.1), 1.0)


def test_eq_3_equals_eq_9_through_the_rates() -> None:
    """Lampert Theorem 1/eq. (8)-(9): transforming P_pi equals evaluating the rates at pi'."""
    tpr, fpr = np.array([0.05, 0.4, 0.9]), np.array([0.001, 0.1, 0.7])
    at_pi = precision_at_skew(tpr, fpr, 0.02)
    assert np.allclose(
        transform_precision(at_pi, 0.02, 0.3), precision_at_skew(tpr, fpr, 0.3), atol=1e-14
    )


def test_integrated_auc_is_the_mean_of_average_precision_over_the_range() -> None:
    """The integrated P-R area (step sum) equals (1 / (pi2 - pi1)) * int AP(pi) dpi."""
    rng = np.random.default_rng(7)
    tpr = np.sort(rng.uniform(0.0, 1.0, 40))
    fpr = np.sort(rng.uniform(0.0, 1.0, 40))
    tpr[-1] = fpr[-1] = 1.0
    area = integrated_auc_pr((tpr, fpr), 0.01, 0.3)
    mean_ap, _ = quad(lambda p: average_precision_at_skew((tpr, fpr), p), 0.01, 0.3, epsabs=1e-14)
    assert area == pytest.approx(mean_ap / 0.29, abs=1e-11)
    recall, precision = integrated_pr_curve((tpr, fpr), 0.01, 0.3)
    assert np.array_equal(recall, tpr)
    assert np.all((precision >= 0.0) & (precision <= 1.0))


def test_roc_input_drops_the_empty_point_and_checks_order() -> None:
    """A leading (0, 0) point (nothing predicted) is dropped; unsorted curves are refused."""
    with_origin = ([0.0, 0.5, 1.0], [0.0, 0.1, 1.0])
    without = ([0.5, 1.0], [0.1, 1.0])
    assert integrated_auc_pr(with_origin, 0.0, 0.5) == integrated_auc_pr(without, 0.0, 0.5)
    with pytest.raises(ValueError, match="descending score order"):
        integrated_auc_pr(([1.0, 0.5], [1.0, 0.1]), 0.0, 0.5)
    with pytest.raises(ValueError, match="within"):
        integrated_auc_pr(([0.5, 1.2], [0.1, 1.0]), 0.0, 0.5)


def test_transform_precision_validates_its_skews() -> None:
    """Lampert eq. (3) needs pi and pi' strictly inside (0, 1)."""
    with pytest.raises(ValueError, match="pi_new"):
        transform_precision(0.5, 0.1, 1.0)
    with pytest.raises(ValueError, match="precision"):
        transform_precision(1.5, 0.1, 0.2)
