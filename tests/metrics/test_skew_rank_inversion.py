"""Rank inversion of AUC-PR over skew (Lampert & Gancarski 2014, section 4.1.1, Algorithm 1).

Crossings are checked against an independent exact method: with y = pi / (1 - pi), the AP
difference of two ROC curves is a rational function of y, so its flips are the positive real
roots of a polynomial (numpy.polynomial). Random curves are checked against a brute-force scan.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from scipy.optimize import brentq

from app.metrics import build_sketch, evaluate, evaluate_sketch
from app.metrics.skew import average_precision_at_skew, rank_inversion_skews
from tests.support.rank_curves import (
    ONE_CROSSING,
    TWO_CROSSINGS,
    Curve,
    empirical_curve,
    exact_flips,
)


@pytest.mark.parametrize(("a", "b", "count"), [(*ONE_CROSSING, 1), (*TWO_CROSSINGS, 2)])
def test_algorithm_1_finds_every_known_crossing(a: Curve, b: Curve, count: int) -> None:
    """Lampert Algorithm 1 after a scan: all flips of constructed curves (one, and two) to 1e-9."""
    exact = exact_flips(a, b)
    assert exact.size == count
    found = rank_inversion_skews(a, b)
    assert found == pytest.approx(exact, rel=1e-9)
    for pi in found:
        below = average_precision_at_skew(a, pi * (1 - 1e-6)) - average_precision_at_skew(
            b, pi * (1 - 1e-6)
        )
        above = average_precision_at_skew(a, pi * (1 + 1e-6)) - average_precision_at_skew(
            b, pi * (1 + 1e-6)
        )
        assert below * above < 0.0


def test_two_crossings_are_order_symmetric() -> None:
    """Swapping the models gives the same flip skews; a curve against itself never flips."""
    a, b = TWO_CROSSINGS
    assert np.array_equal(rank_inversion_skews(a, b), rank_inversion_skews(b, a))
    assert rank_inversion_skews(a, a).size == 0


def test_curves_that_do_not_cross_in_pr_space_never_flip() -> None:
    """Lampert Corollary 1: if P^1(R) >= P^2(R) at every recall, the AUC-PR order is constant."""
    tpr = np.array([0.1, 0.3, 0.6, 0.9, 1.0])
    fpr = np.array([0.001, 0.01, 0.1, 0.4, 1.0])
    worse = np.minimum(fpr * 1.5, 1.0)
    assert rank_inversion_skews((tpr, fpr), (tpr, worse)).size == 0


def _ap_on_grid(
    curve: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]], pis: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Brute force: the step sum at every skew of ``pis`` at once, straight from the definition."""
    tpr, fpr = curve
    steps = np.diff(tpr, prepend=0.0)
    precision = pis[:, None] * tpr / (pis[:, None] * tpr + (1 - pis[:, None]) * fpr)
    result: npt.NDArray[np.float64] = precision @ steps
    return result


@pytest.mark.parametrize("seed", range(6))
def test_random_curves_match_a_brute_force_scan(seed: int) -> None:
    """Every flip a dense brute-force scan of AP_a(pi) - AP_b(pi) sees (pi in [1e-4, 1 - 1e-4],
    refined by scipy's brentq) is found, and nothing else inside that range."""
    rng = np.random.default_rng(seed)
    a = empirical_curve(rng, 25, 1.5, 2.0)
    b = empirical_curve(rng, 25, 1.5, 0.7)

    def difference(pi: float) -> float:
        return average_precision_at_skew(a, pi) - average_precision_at_skew(b, pi)

    grid = np.concatenate([np.geomspace(1e-4, 0.5, 5000), 1 - np.geomspace(0.5, 1e-4, 5000)[1:]])
    values = _ap_on_grid(a, grid) - _ap_on_grid(b, grid)
    flips = np.flatnonzero(np.sign(values[1:]) != np.sign(values[:-1]))
    brute = np.array([brentq(difference, grid[i], grid[i + 1], xtol=1e-15) for i in flips])
    found = rank_inversion_skews(a, b)
    inside = found[(found > 1e-4) & (found < 1 - 1e-4)]
    assert inside.size == brute.size  # seeds 0 and 2-5 cross once, seed 1 never
    assert inside == pytest.approx(brute, rel=1e-8)


def test_fraud_like_crossing_at_a_tiny_skew() -> None:
    """A flip near pi = 1e-4 (fraud rates) keeps full relative accuracy (logit-axis bisection)."""
    a: Curve = ([0.5, 1.0], [1e-5, 0.5])
    b: Curve = ([0.2, 1.0], [1e-6, 0.3])
    exact = exact_flips(a, b)
    assert exact.size > 0
    assert exact.min() < 1e-3
    assert rank_inversion_skews(a, b) == pytest.approx(exact, rel=1e-9)


def _window(
    rng: np.random.Generator, shift: float, spread: float, n: int = 4000
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    labels = (rng.random(n) < 0.05).astype(np.int64)
    scores = np.where(labels == 1, rng.normal(shift, spread, n), rng.normal(0.0, 1.0, n))
    # Rounding makes ties, as real scores have.
    return np.round(scores, 2).astype(np.float64), labels


def test_average_precision_at_skew_equals_the_kernels_calibrated_ap() -> None:
    """AP at skew pi from ``result.sketch.roc_points()`` equals the kernel's calibrated AP at
    pi0 = pi (Siblini eq. 5 inside sklearn's step sum) to 1e-12, ties included."""
    rng = np.random.default_rng(3)
    scores, labels = _window(rng, 1.5, 1.0)
    result = evaluate(scores, labels, threshold=0.5, pi0=0.05)
    for pi in (1e-4, 0.005, 0.05, 0.3, 0.5, 0.9):
        kernel = evaluate_sketch(result.sketch, pi0=pi).calibrated["average_precision"]
        assert kernel is not None
        assert average_precision_at_skew(result, pi) == pytest.approx(kernel, abs=1e-12)
        assert average_precision_at_skew(result.sketch, pi) == pytest.approx(kernel, abs=1e-12)


def test_rank_inversion_accepts_results_sketches_and_arrays() -> None:
    """Evaluation results, curve sketches and (tpr, fpr) pairs give the same flips, and the
    kernel's calibrated APs change order across each flip."""
    rng = np.random.default_rng(11)
    first = evaluate(*_window(rng, 1.5, 2.0), threshold=0.5, pi0=0.05)
    second = evaluate(*_window(rng, 1.5, 0.7), threshold=0.5, pi0=0.05)
    from_results = rank_inversion_skews(first, second)
    from_sketches = rank_inversion_skews(first.sketch, second.sketch)
    from_arrays = rank_inversion_skews(first.sketch.roc_points(), second.sketch.roc_points())
    assert from_results.size > 0
    assert np.array_equal(from_results, from_sketches)
    assert np.array_equal(from_results, from_arrays)

    def kernel_gap(pi: float) -> float:
        a = evaluate_sketch(first.sketch, pi0=pi).calibrated["average_precision"]
        b = evaluate_sketch(second.sketch, pi0=pi).calibrated["average_precision"]
        assert a is not None
        assert b is not None
        return a - b

    for pi in from_results:
        assert kernel_gap(pi * (1 - 1e-6)) * kernel_gap(pi * (1 + 1e-6)) < 0.0


def test_sketch_built_directly_works_too() -> None:
    """``build_sketch`` output (no evaluation) is accepted as a curve."""
    rng = np.random.default_rng(5)
    sketch = build_sketch(*_window(rng, 1.0, 1.0), threshold=0.5)
    tpr, fpr = sketch.roc_points()
    assert average_precision_at_skew(sketch, 0.2) == average_precision_at_skew((tpr, fpr), 0.2)


@pytest.mark.parametrize("fast_above", [10**12, 1])
def test_one_curve_against_itself_never_flips(fast_above: int) -> None:
    """A model compared with an identical one (the same rows, scored the same) ties at every
    skew: rounding in the two step sums once showed as hundreds of flips, from 1e-20 to 1.0."""
    rng = np.random.default_rng(5)
    labels = (rng.random(4500) < 0.05).astype(np.int8)
    scores = np.round(np.where(labels == 1, rng.normal(1.5, 2.0, 4500), rng.normal(size=4500)), 3)
    a = build_sketch(scores, labels, threshold=1.5)
    b = build_sketch(scores.copy(), labels.copy(), threshold=1.5)
    flips = rank_inversion_skews(a, b, scan_step=0.05, tolerance=1e-9, fast_above=fast_above)
    assert flips.size == 0
