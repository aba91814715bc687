"""The what-if kernel (app.metrics.whatif), the champion/challenger difference and the catalogue."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
import pytest
from scipy.integrate import quad

from app.metrics import CurveSketch, InvalidInputError, build_sketch, evaluate_sketch
from app.metrics._replicates import trajectory_nodes
from app.metrics.catalogue import reference_sensitivities, registry_sensitivities
from app.metrics.compare import compare_average_precision, window_difference_interval
from app.metrics.registry import METRIC_NAMES
from app.metrics.sensitivity import contingency_grid, metric_surface
from app.metrics.skew import average_precision_at_skew, temporal_precision
from app.metrics.types import Interval
from app.metrics.whatif import (
    NOTHING_FLAGGED,
    along_trajectory,
    at_prior,
    over_range,
    range_intervals,
    trajectory_function,
    trajectory_intervals,
)


def _sketch(seed: int, spread: float = 1.0, threshold: float = 1.5, n: int = 5000) -> CurveSketch:
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.04).astype(np.int8)
    scores = np.where(labels == 1, rng.normal(2.0, spread, n), rng.normal(0.0, 1.0, n))
    return build_sketch(np.round(scores, 2), labels, threshold=threshold)


def _bracketing(
    precision: Interval | None, area: Interval | None, exact: float | None, exact_area: float
) -> Interval:
    """Both intervals exist and hold the exact values strictly inside; the area's interval."""
    assert precision is not None
    assert area is not None
    assert exact is not None
    assert precision[0] < exact < precision[1]
    assert area[0] < exact_area < area[1]
    return area


def test_at_the_sketchs_own_prior_every_metric_is_its_regular_value_bit_for_bit() -> None:
    """k = pi (1 - pi0) / (pi0 (1 - pi)) is exactly 1 at pi0 = pi, so nothing is rounded."""
    sketch = _sketch(1)
    own = sketch.positives / sketch.n
    regular = evaluate_sketch(sketch, pi0=0.01).regular
    assert dict(at_prior(sketch, own).calibrated) == dict(regular)


def test_range_area_is_the_mean_of_ap_over_the_range_and_a_flat_weight_changes_nothing() -> None:
    """Lampert section 4.3.2: the integrated P-R area is the mean of AP(pi) over [pi1, pi2]
    (scipy's quad on the step sum), and weight w = 1 is the unweighted mean (eq. 7)."""
    sketch = _sketch(2)
    lo, hi = 0.005, 0.08
    plain = over_range(sketch, lo, hi)
    mean, _ = quad(lambda p: average_precision_at_skew(sketch, p), lo, hi, epsabs=1e-12)
    assert plain.average_precision == pytest.approx(mean / (hi - lo), abs=1e-10)
    flat = over_range(sketch, lo, hi, weight=[(lo, 2.0), (hi, 2.0)])
    assert flat.weighted
    assert flat.precision == pytest.approx(plain.precision, abs=1e-12)
    assert flat.average_precision == pytest.approx(plain.average_precision, abs=1e-12)
    # All the weight at the top end: the means lean towards pi_hi's values.
    top = over_range(sketch, lo, hi, weight=[(lo, 0.0), (hi, 1.0)])
    assert top.precision is not None
    assert plain.precision is not None
    assert top.precision > plain.precision
    assert plain.normalised_average_precision is not None
    assert 0.0 < plain.normalised_average_precision < 1.0


def test_a_constant_trajectory_is_that_priors_precision_and_ap() -> None:
    """Lampert eq. (4) with pi(t) constant: temporal precision is the precision at that pi."""
    sketch = _sketch(3)
    moving = along_trajectory(sketch, [(0.0, 0.02), (5.0, 0.02), (9.0, 0.02)], "log")
    fixed = at_prior(sketch, 0.02).calibrated
    assert moving.precision == pytest.approx(fixed["precision"], abs=1e-12)
    assert moving.average_precision == pytest.approx(fixed["average_precision"], abs=1e-12)


def test_nothing_flagged_makes_precision_none_with_a_reason() -> None:
    """A threshold above every score flags nothing: precision is 0/0, AP is still defined."""
    sketch = _sketch(4, threshold=99.0)
    ranged = over_range(sketch, 0.01, 0.1)
    assert ranged.precision is None
    assert ranged.reason == NOTHING_FLAGGED
    assert along_trajectory(sketch, [(0.0, 0.01), (1.0, 0.1)]).precision is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: over_range(s, 0.2, 0.1), "pi_lo"),
        (lambda s: over_range(s, 0.1, 0.2, weight=[(0.1, 1.0)]), "two"),
        (lambda s: over_range(s, 0.1, 0.2, weight=[(0.3, 1.0), (0.4, 1.0)]), "weight"),
        (lambda s: along_trajectory(s, [(1.0, 0.1), (0.0, 0.1)]), "increasing"),
        (lambda s: along_trajectory(s, [(0.0, 0.0), (1.0, 0.1)], "log"), "above 0"),
    ],
)
def test_bad_ranges_weights_and_trajectories_are_input_errors(
    call: Callable[[CurveSketch], object], message: str
) -> None:
    """Every bad parameter is an InvalidInputError that says what is wrong."""
    with pytest.raises(InvalidInputError, match=message):
        call(_sketch(5))


def test_compare_is_exact_at_the_centre_and_its_interval_holds_it() -> None:
    """The difference is AP_b - AP_a at the prior exactly (and over a range the difference of
    the integrated areas); the interval lies around it."""
    a, b = _sketch(6, spread=2.0), _sketch(7, spread=0.7)
    (at,), ranged = compare_average_precision(a, b, [0.01], pi_range=(0.005, 0.05), replicates=400)
    assert at.difference == average_precision_at_skew(b, 0.01) - average_precision_at_skew(a, 0.01)
    assert at.interval is not None
    assert at.interval[0] < at.difference < at.interval[1]
    assert ranged is not None
    assert ranged.difference == ranged.challenger - ranged.champion
    assert ranged.interval is not None
    assert ranged.interval[0] < ranged.difference < ranged.interval[1]
    with pytest.raises(InvalidInputError):
        compare_average_precision(a, b, [0.01], pi_range=(0.05, 0.05))


def test_calibrated_f1_surface_is_the_harmonic_mean_of_calibrated_precision_and_recall() -> None:
    """Siblini's calibrated F1 = 2 P_c R / (P_c + R) on the contingency lattice."""
    tnr, tpr = contingency_grid(20)
    p_c = metric_surface("calibrated_precision", 49.0, tnr, tpr, pi0=0.02).values
    f1_c = metric_surface("calibrated_f1", 49.0, tnr, tpr, pi0=0.02).values
    assert np.allclose(f1_c, 2 * p_c * tpr / (p_c + tpr), atol=1e-14)


def test_catalogue_lists_every_registry_metric_once() -> None:
    """One entry per registry metric, in registry order; reasons only where values are None."""
    entries = registry_sensitivities(99.0, 0.01)
    assert [e.name for e in entries] == list(METRIC_NAMES)
    for e in entries:
        assert (e.regular is None) == (e.reason is not None)
    assert {e.name for e in reference_sensitivities(99.0)} == {"accuracy", "tss", "hss", "youden"}


def test_range_intervals_hold_the_exact_means_and_narrow_with_more_data() -> None:
    """The integrated precision's and area's bootstrap intervals are around their exact
    values (weighted or not), and a window with 4x the rows has a narrower interval."""
    small, large = _sketch(8, n=5000), _sketch(8, n=20000)
    widths = []
    for sketch in (small, large):
        area: tuple[float, float] | None = None
        for weight in (None, [(0.01, 1.0), (0.05, 3.0)]):
            analysis = over_range(sketch, 0.01, 0.05, weight)
            precision, area = range_intervals(sketch, analysis, weight, replicates=400)
            area = _bracketing(precision, area, analysis.precision, analysis.average_precision)
        assert area is not None
        widths.append(area[1] - area[0])
    assert widths[1] < widths[0]
    nothing = _sketch(4, threshold=99.0)
    flagged, anything = range_intervals(nothing, over_range(nothing, 0.01, 0.1), replicates=100)
    assert flagged is None
    assert anything is not None


@pytest.mark.parametrize(
    ("points", "interpolation"),
    [
        ([(0.0, 0.004), (10.0, 0.006), (30.0, 0.008)], "log"),
        ([(0.0, 0.0), (5.0, 0.02), (6.0, 0.5), (9.0, 1.0), (12.0, 1.0)], "linear"),
        ([(float(t), min(2.0**t / 10_000, 1.0)) for t in range(21)], "log"),
    ],
)
def test_temporal_ap_equals_the_step_sum_of_every_points_temporal_precision(
    points: list[tuple[float, float]], interpolation: Literal["linear", "log"]
) -> None:
    """Lampert eq. (4) applied point by point along the curve and summed (the definition) equals
    the interpolated integral of AP(pi(t)) to 1e-10, trajectories reaching 0 and 1 included."""
    sketch = _sketch(9, spread=1.5, n=20_000)
    analysis = along_trajectory(sketch, points, interpolation)
    tpr, fpr = sketch.roc_points()
    pi_of_t = trajectory_function(points, interpolation)
    start, end = points[0][0], points[-1][0]
    per_point = temporal_precision(tpr, fpr, lambda t: pi_of_t(t + start), end - start)
    definition = float(np.dot(np.diff(tpr, prepend=0.0), per_point))
    assert analysis.average_precision == pytest.approx(definition, abs=1e-10)


def test_trajectory_intervals_hold_the_exact_means_and_narrow_with_more_data() -> None:
    """The temporal precision's and AP's bootstrap intervals are around their exact values, for
    a log trajectory and one reaching 0 and 1, and 4x the rows give a narrower interval."""
    rising = [(0.0, 0.01), (10.0, 0.03), (30.0, 0.08)]
    edges = [(0.0, 0.0), (5.0, 0.02), (6.0, 0.5), (9.0, 1.0), (12.0, 1.0)]
    widths = []
    for sketch in (_sketch(10, n=5000), _sketch(10, n=20_000)):
        for points, interpolation in ((rising, "log"), (edges, "linear")):
            analysis = along_trajectory(sketch, points, interpolation)  # type: ignore[arg-type]
            precision, area = trajectory_intervals(sketch, analysis, points, replicates=400)
            area = _bracketing(precision, area, analysis.precision, analysis.average_precision)
            width = area[1] - area[0]
        widths.append(width)
    assert widths[1] < widths[0]
    nothing = _sketch(4, threshold=99.0)
    analysis = along_trajectory(nothing, rising, "log")
    flagged, anything = trajectory_intervals(nothing, analysis, rising, replicates=100)
    assert flagged is None
    assert anything is not None


def test_trajectory_nodes_keep_the_time_spent_at_each_fraud_rate() -> None:
    """16 priors whatever the number of points, weights summing to 1, and the time-weighted mean
    log-odds of the trajectory kept exactly (each slice is read at its own mean log-odds)."""
    points = [(float(t), 0.01 * 1.01**t) for t in range(200)]
    pi_of_t = trajectory_function(points, "log")
    times = np.array([t for t, _ in points])
    nodes, weights = trajectory_nodes(times, pi_of_t)
    assert nodes.size == 16
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(nodes) > 0.0)
    logit = np.log(nodes / (1.0 - nodes))
    pis = pi_of_t(np.linspace(0.0, 199.0, 200_001))
    mean_logit = float(np.mean(np.log(pis) - np.log1p(-pis)))
    assert float(np.dot(weights, logit)) == pytest.approx(mean_logit, abs=1e-6)
    flat, flat_weights = trajectory_nodes(np.array([0.0, 30.0]), lambda t: np.full(t.shape, 0.02))
    assert flat == pytest.approx(np.full(flat.size, 0.02), rel=1e-12)
    assert flat_weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_window_difference_interval_is_movers_root_sum_of_half_widths() -> None:
    """Symmetric intervals give d +- sqrt(h_a^2 + h_b^2); asymmetric ones take each model's half
    on the side that moves the difference that way (Zou & Donner 2008)."""
    low, high = window_difference_interval(0.30, (0.27, 0.33), 0.40, (0.36, 0.44))
    assert low == pytest.approx(0.10 - 0.05, abs=1e-12)
    assert high == pytest.approx(0.10 + 0.05, abs=1e-12)
    low, high = window_difference_interval(0.30, (0.29, 0.36), 0.40, (0.32, 0.41))
    assert low == pytest.approx(0.10 - math.hypot(0.08, 0.06), abs=1e-12)
    assert high == pytest.approx(0.10 + math.hypot(0.01, 0.01), abs=1e-12)


@pytest.mark.parametrize("pi", [0.0, 1.0])
def test_a_trajectory_held_at_0_or_1_takes_the_limits(pi: float) -> None:
    """pi(t) = 1 throughout (logits of +inf at both ends) used to make the AP interpolant's span
    inf - inf (a 500 through the API); at 1 precision and AP are 1, at 0 AP is the curve's
    FPR = 0 steps and precision 0, and the intervals are as narrow as float32 replicates allow."""
    sketch = _sketch(11)
    points = [(0.0, pi), (10.0, pi)]
    analysis = along_trajectory(sketch, points, "linear")
    tpr, fpr = sketch.roc_points()
    steps = np.diff(tpr, prepend=0.0)
    expected_ap = 1.0 if pi == 1.0 else float(steps[(fpr == 0.0) & (steps > 0.0)].sum())
    assert analysis.average_precision == pytest.approx(expected_ap, abs=1e-12)
    assert analysis.precision == pytest.approx(pi, abs=1e-12)
    precision, area = trajectory_intervals(sketch, analysis, points, replicates=200)
    assert precision is not None
    assert area is not None
    assert precision[1] - precision[0] < 1e-6


def _random_classifier() -> CurveSketch:
    """Every score holds frauds and legitimate rows in one proportion: TPR = FPR throughout."""
    scores = np.repeat(np.linspace(0.0, 1.0, 50), 40)
    labels = np.tile(np.r_[np.ones(2), np.zeros(38)], 50).astype(np.int8)
    return build_sketch(scores, labels, threshold=0.5)


def test_the_random_baseline_over_a_range_is_lamperts_eq_22() -> None:
    """Unweighted: (pi1 + pi2) / 2 (Lampert eq. 22); weighted: the weighted mean fraud rate;
    and a random classifier's own integrated area equals it."""
    sketch, random = _sketch(3), _random_classifier()
    for lo, hi in ((0.001, 0.01), (0.0, 0.5), (0.3, 0.5), (0.6, 0.9)):
        assert over_range(sketch, lo, hi).random_average_precision == pytest.approx(
            (lo + hi) / 2, rel=1e-12
        )
        assert over_range(random, lo, hi).average_precision == pytest.approx(
            (lo + hi) / 2, rel=1e-9
        )
    weight = [(0.001, 1.0), (0.02, 5.0)]
    mean = (
        quad(lambda p: p * np.interp(p, [0.001, 0.02], [1.0, 5.0]), 0.001, 0.02)[0]
        / quad(lambda p: np.interp(p, [0.001, 0.02], [1.0, 5.0]), 0.001, 0.02)[0]
    )
    assert over_range(sketch, 0.001, 0.02, weight).random_average_precision == pytest.approx(
        mean, rel=1e-10
    )
    assert over_range(random, 0.001, 0.02, weight).average_precision == pytest.approx(
        mean, rel=1e-9
    )


@pytest.mark.parametrize("interpolation", ["linear", "log"])
def test_the_random_baseline_along_a_trajectory_is_lamperts_eq_15(
    interpolation: Literal["linear", "log"],
) -> None:
    """(1/T) integral of pi(t) dt (Lampert eq. 15): the endpoints' mean when pi is linear in t,
    (b - a) / ln(b / a) when log pi is."""
    a, b = 0.004, 0.008
    analysis = along_trajectory(_sketch(4), [(0.0, a), (30.0, b)], interpolation)
    expected = (a + b) / 2 if interpolation == "linear" else (b - a) / math.log(b / a)
    assert analysis.random_average_precision == pytest.approx(expected, rel=1e-12)
    random = along_trajectory(_random_classifier(), [(0.0, a), (30.0, b)], interpolation)
    assert random.average_precision == pytest.approx(expected, rel=1e-9)
