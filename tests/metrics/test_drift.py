"""Drift decomposition: prior effect + performance effect = total; verdicts from intervals."""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import pytest

from app.metrics import (
    METRIC_NAMES,
    VERDICTS,
    Decomposition,
    EvaluationResult,
    Intervals,
    InvalidInputError,
    WindowEstimate,
    bootstrap,
    decompose,
    evaluate,
    pool_baseline,
)
from tests.support.synthetic import siblini_window


def _estimate(
    *,
    ap: float | None,
    ap_c: float | None,
    se: float | None = 0.01,
    n: int = 20_000,
    positives: int = 100,
) -> WindowEstimate:
    """A window whose every metric is (regular ap, calibrated ap_c) with standard error se."""
    unit = {} if se is None else dict.fromkeys(METRIC_NAMES, se * positives**0.5)
    return WindowEstimate(
        n=n,
        positives=positives,
        pi0=0.005,
        windows=1,
        regular=MappingProxyType(dict.fromkeys(METRIC_NAMES, ap)),
        calibrated=MappingProxyType(dict.fromkeys(METRIC_NAMES, ap_c)),
        regular_se=MappingProxyType(dict.fromkeys(METRIC_NAMES, se)),
        calibrated_se=MappingProxyType(dict.fromkeys(METRIC_NAMES, se)),
        calibrated_unit_se=MappingProxyType(unit),
    )


BASE = _estimate(ap=0.50, ap_c=0.50)


@pytest.mark.parametrize(
    ("current", "verdict"),
    [
        (_estimate(ap=0.50, ap_c=0.50), "stable"),
        (_estimate(ap=0.40, ap_c=0.40), "performance_drop"),
        (_estimate(ap=0.60, ap_c=0.60), "performance_gain"),
        # A change within the noise (0.03 is about 2 standard errors of the difference):
        (_estimate(ap=0.47, ap_c=0.47), "stable"),
        # Significant but immaterial (below 5% of the baseline) is stable too:
        (_estimate(ap=0.49, ap_c=0.49, se=0.0001), "stable"),
        # pi doubled and the regular metric moved with it, the calibrated one did not:
        (_estimate(ap=0.70, ap_c=0.50, positives=200), "prior_shift"),
        # pi doubled but the regular metric barely moved: not material.
        (_estimate(ap=0.51, ap_c=0.50, positives=200), "stable"),
        (_estimate(ap=0.50, ap_c=0.30, positives=200), "both"),
        (_estimate(ap=0.50, ap_c=0.50, se=None), "insufficient_data"),
        (_estimate(ap=None, ap_c=None), "insufficient_data"),
    ],
)
def test_verdict_rule(current: WindowEstimate, verdict: str) -> None:
    result = decompose(current, BASE)
    assert result.verdict == verdict, result.reason
    assert result.verdict in VERDICTS
    assert result.primary_metric == "average_precision"


def test_a_small_window_is_judged_with_the_baselines_spread() -> None:
    """30 positives that happened to rank badly: the window's own bootstrap interval is narrow
    around the low value, but windows that small scatter like the baseline's do at that size."""
    baseline = pool_baseline(
        [_estimate(ap=0.5, ap_c=0.5, se=0.03, positives=150) for _ in range(3)]
    )
    assert baseline.calibrated_unit_se["average_precision"] == pytest.approx(0.03 * 150**0.5)
    unlucky = _estimate(ap=0.3, ap_c=0.3, se=0.02, positives=30)
    assert decompose(unlucky, baseline).verdict == "stable"
    assert decompose(_estimate(ap=0.1, ap_c=0.1, se=0.02, positives=30), baseline).verdict == (
        "performance_drop"
    )


def test_lower_is_better_metrics_flip_the_direction() -> None:
    result = decompose(_estimate(ap=0.40, ap_c=0.40), BASE)
    assert result.metrics["average_precision"] is not None
    assert result.metrics["average_precision"].verdict == "performance_drop"
    fpr = result.metrics["fpr"]
    assert fpr is not None
    assert fpr.verdict == "performance_gain"  # a lower false positive rate is better
    threshold = result.metrics["best_f1_threshold"]
    assert threshold is not None
    assert threshold.verdict == "stable"  # a threshold is neither better nor worse


def test_parameters_are_keyword_arguments() -> None:
    current = _estimate(ap=0.45, ap_c=0.45)
    assert decompose(current, BASE).verdict == "performance_drop"
    assert decompose(current, BASE, tolerance=0.2).verdict == "stable"
    assert decompose(current, BASE, decision_level=0.999999).verdict == "stable"
    assert decompose(current, BASE, primary_metric="roc_auc").primary_metric == "roc_auc"
    with pytest.raises(KeyError, match="unknown metric"):
        decompose(current, BASE, primary_metric="accuracy")


def _window(
    pi: float, mu1: float, seed: int, n: int = 30_000
) -> tuple[EvaluationResult, Intervals]:
    rng = np.random.default_rng([77, seed, int(pi * 1e4), int(mu1 * 100)])
    scores, labels = siblini_window(n, pi, mu1, 0.0, rng)
    result = evaluate(scores, labels, threshold=2.0, pi0=0.005)
    return result, bootstrap(result.sketch, pi0=0.005, seed=seed)


@pytest.fixture(scope="module")
def baseline() -> WindowEstimate:
    return pool_baseline([_window(0.005, 2.0, seed) for seed in range(7)])


def test_effects_add_up_to_the_total_change(baseline: WindowEstimate) -> None:
    current = _window(0.02, 1.6, seed=100)
    decomposition = decompose(current, baseline)
    result = current[0]
    for name, change in decomposition.metrics.items():
        assert change is not None, name
        regular_b, calibrated_b = baseline.regular[name], baseline.calibrated[name]
        assert regular_b is not None
        assert calibrated_b is not None
        assert change.total == result.regular[name] - regular_b  # type: ignore[operator]
        assert change.performance_effect == result.calibrated[name] - calibrated_b  # type: ignore[operator]
        assert change.prior_effect + change.performance_effect == pytest.approx(
            change.total, abs=1e-15
        )
    assert set(decomposition.to_dict()) == {"verdict", "primary_metric", "reason", "metrics"}


def test_pure_prior_drift_is_never_a_performance_drop(baseline: WindowEstimate) -> None:
    """The model is unchanged; only the fraud ratio moves over 0.001..0.02 (n = 30,000)."""
    verdicts = []
    for seed, pi in enumerate([0.001, 0.002, 0.005, 0.01, 0.02] * 2):
        decomposition = decompose(_window(pi, 2.0, seed=200 + seed), baseline)
        change = decomposition.metrics["average_precision"]
        assert change is not None
        assert decomposition.verdict != "performance_drop", decomposition.reason
        assert not (decomposition.verdict == "both" and change.performance_effect < 0)
        verdicts.append(decomposition.verdict)
    assert verdicts.count("prior_shift") >= 3  # the high-ratio windows are told apart


def test_a_degrading_model_is_flagged(baseline: WindowEstimate) -> None:
    """Positive scores drift from N(2, 1) towards N(1.4, 1): flagged at the latest by mu1=1.4."""
    flagged = [
        decompose(_window(0.005, mu1, seed=300 + i), baseline).verdict
        for i, mu1 in enumerate([1.8, 1.6, 1.4])
    ]
    assert "performance_drop" in flagged
    assert flagged[-1] == "performance_drop"
    both = decompose(_window(0.02, 1.4, seed=400), baseline)
    assert both.verdict == "both"


def test_pooling_rejects_mixed_pi0_and_empty_input() -> None:
    a = _estimate(ap=0.5, ap_c=0.5)
    b = WindowEstimate(**{**a.__dict__, "pi0": 0.01})
    with pytest.raises(InvalidInputError, match="different pi0"):
        pool_baseline([a, b])
    with pytest.raises(InvalidInputError, match="different pi0"):
        decompose(a, b)
    with pytest.raises(InvalidInputError, match="at least one"):
        pool_baseline([])


def test_pooled_baseline_weights_by_positives() -> None:
    a = _estimate(ap=0.2, ap_c=0.4, positives=100, se=0.02)
    b = _estimate(ap=0.5, ap_c=0.7, positives=300, se=0.01)
    pooled = pool_baseline([a, b])
    assert pooled.windows == 2
    assert pooled.positives == 400
    assert pooled.pi == 400 / 40_000
    assert pooled.regular["average_precision"] == pytest.approx(0.425)
    assert pooled.calibrated["average_precision"] == pytest.approx(0.625)
    expected_se = np.hypot(100 * 0.02, 300 * 0.01) / 400
    assert pooled.calibrated_se["average_precision"] == pytest.approx(expected_se)


def test_to_dict_is_the_interface_shape() -> None:
    d = decompose(_estimate(ap=0.4, ap_c=0.4), BASE).to_dict()
    assert isinstance(Decomposition, type)
    assert set(d["metrics"]["average_precision"]) == {
        "total",
        "prior_effect",
        "performance_effect",
        "verdict",
    }


def test_pooling_equals_the_plain_weighted_sums_bit_for_bit() -> None:
    """pool_baseline vectorises over windows and metrics; it must give exactly the floats of
    the rule written as plain Python sums, with undefined values and errors left out."""
    rng = np.random.default_rng(12)
    windows = []
    for i in range(7):
        e = _estimate(ap=float(rng.random()), ap_c=float(rng.random()), positives=50 + 17 * i)
        if i == 2:  # undefined in one window: left out of that metric's mean
            e = _estimate(ap=None, ap_c=None, positives=60)
        if i == 4:  # a window without intervals: the pooled error is unknown
            e = _estimate(ap=0.3, ap_c=0.31, se=None, positives=80)
        windows.append(e)
    pooled = pool_baseline(windows)
    for side in ("regular", "calibrated"):
        points = [(float(e.positives), getattr(e, side)["f1"]) for e in windows]
        points = [(w, v) for w, v in points if v is not None]
        total = sum(w for w, _ in points)
        assert getattr(pooled, side)["f1"] == sum(w * v for w, v in points) / total
        assert getattr(pooled, f"{side}_se")["f1"] is None
    units = [u["f1"] for e in windows if (u := e.calibrated_unit_se)]
    assert pooled.calibrated_unit_se["f1"] == math.sqrt(sum(u * u for u in units) / len(units))
    clean = pool_baseline([w for i, w in enumerate(windows) if i != 4])
    errors = [
        (float(e.positives), e.regular_se["f1"]) for i, e in enumerate(windows) if i not in (2, 4)
    ]
    total = sum(w for w, _ in errors)
    expected = math.sqrt(sum((w * s) ** 2 for w, s in errors if s is not None)) / total
    assert clean.regular_se["f1"] == expected
