"""The drop detector's pieces: normal scores from the null draws, the CUSUM, the verdicts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.monitoring.detector import (
    HOLD,
    REFERENCE_SIGMAS,
    THRESHOLD,
    DetectorState,
    Evidence,
    advance,
    threshold_for,
    weigh,
)
from app.monitoring.verdicts import FloorCheck, PriorCheck, judge


def _evidence(z: float, weight: float = 2.0) -> Evidence:
    return Evidence(0.3, 0.4, 0.4, 0.05, 0.0, z, -z, weight)


def test_scores_are_standard_normal_under_no_change_even_for_a_skewed_null() -> None:
    """A skewed, bounded null (beta(2, 5)): the window's percentile among the draws, not its
    distance in standard deviations, is what is turned into a score."""
    rng = np.random.default_rng(1)
    scores = [
        weigh(
            float(rng.beta(2, 5)),
            rng.beta(2, 5, 1_000),
            reference=0.3,
            reference_se=0.0,
            detection_drop=0.3,
        ).z
        for _ in range(4_000)
    ]
    assert np.mean(scores) == pytest.approx(0.0, abs=0.05)
    assert np.std(scores) == pytest.approx(1.0, abs=0.05)
    # The upper tail of a right-skewed null is long: a naive (x - mean) / sd would call the
    # 1% lowest windows about 1.6 standard deviations low, the percentile says 2.3.
    low = weigh(0.02, rng.beta(2, 5, 1_000), reference=0.3, reference_se=0.0, detection_drop=0.3)
    assert low.z > 2.0


def test_beyond_the_draws_the_score_continues_as_a_normal_tail() -> None:
    draws = np.linspace(0.3, 0.5, 1_000)
    far = weigh(0.0, draws, reference=0.4, reference_se=0.0, detection_drop=0.3)
    assert far.z == pytest.approx((draws.mean() - 0.0) / draws.std())
    edge = weigh(0.2999, draws, reference=0.4, reference_se=0.0, detection_drop=0.3)
    assert edge.z >= 3.0  # never less extreme than the last percentile the draws can tell


def test_the_reference_uncertainty_gives_the_window_the_benefit_of_the_doubt() -> None:
    draws = np.random.default_rng(2).normal(0.4, 0.05, 1_000)
    plain = weigh(0.3, draws, reference=0.4, reference_se=0.0, detection_drop=0.3)
    doubt = weigh(0.3, draws, reference=0.4, reference_se=0.02, detection_drop=0.3)
    assert doubt.margin == REFERENCE_SIGMAS * 0.02
    assert doubt.z < plain.z
    assert doubt.z == pytest.approx(plain.z - 0.02 / 0.05, abs=0.15)
    # rho: the design drop (30% of 0.4) in standard deviations of this window.
    assert plain.weight == pytest.approx(0.3 * 0.4 / draws.std())


def test_increments_are_log_likelihood_ratios() -> None:
    """Under no change (z ~ N(0, 1)), exp(increment) has mean 1: a martingale, whence the
    false-alarm bound exp(-threshold) per window."""
    z = np.random.default_rng(3).standard_normal(400_000)
    for weight in (0.5, 1.0, 1.5):
        increments = weight * z - weight * weight / 2
        assert np.mean(np.exp(increments)) == pytest.approx(1.0, abs=0.03)


def test_pages_above_the_threshold_holds_with_hysteresis_and_clears() -> None:
    state = DetectorState()
    state = advance(state, _evidence(3.0), THRESHOLD)  # +4
    assert not state.paging
    state = advance(state, _evidence(3.0), THRESHOLD)  # +4 -> 8
    state = advance(state, _evidence(3.0), THRESHOLD)  # 12 > 10: pages
    assert state.paging
    assert state.drop == pytest.approx(12.0)
    for _ in range(5):
        state = advance(state, _evidence(4.0), THRESHOLD)
    assert state.drop == (1 + HOLD) * THRESHOLD  # capped: recovery takes bounded evidence
    state = advance(state, _evidence(-0.5), THRESHOLD)  # -3: 12 < 10 + 5, still above half
    state = advance(state, _evidence(-0.5), THRESHOLD)  # 9 < threshold: still paging
    assert state.paging
    state = advance(state, _evidence(-0.5), THRESHOLD)  # 6
    state = advance(state, _evidence(-0.5), THRESHOLD)  # 3 < 5: clears
    assert not state.paging
    assert state.windows == 12


def test_gains_are_tracked_apart_and_never_page() -> None:
    state = DetectorState()
    for _ in range(4):
        state = advance(state, _evidence(-3.0), THRESHOLD)
    assert state.gaining
    assert not state.paging
    assert state.drop == 0.0


def test_named_segments_share_the_model_budget() -> None:
    assert threshold_for(segment_is_whole=True, named_segments=50) == THRESHOLD
    assert threshold_for(segment_is_whole=False, named_segments=1) == THRESHOLD
    assert threshold_for(segment_is_whole=False, named_segments=10) == pytest.approx(
        THRESHOLD + math.log(10)
    )


@pytest.mark.parametrize(
    "case",
    [
        (False, False, False, 0.5, "stable", ()),
        (False, False, True, 0.5, "prior_shift", ()),
        (True, False, False, 0.5, "performance_drop", ("cusum",)),
        (True, False, True, 0.5, "both", ("cusum",)),
        (False, True, False, 0.5, "performance_gain", ()),
        # The floor pages only when the whole interval lies below it.
        (False, False, False, 0.25, "performance_drop", ("floor",)),
        (False, False, False, 0.35, "stable", ()),
        (True, False, False, 0.25, "performance_drop", ("cusum", "floor")),
    ],
)
def test_verdicts_and_signals(
    case: tuple[bool, bool, bool, float, str, tuple[str, ...]],
) -> None:
    """(paging, gaining, prior shifted, top of the AP interval) -> (verdict, signals)."""
    paging, gaining, prior, ci_high, verdict, signals = case
    state = DetectorState(drop=12.0 if paging else 1.0, paging=paging, gaining=gaining)
    judgement = judge(
        state, _evidence(1.0), threshold=10.0, prior_shifted=prior, floor=FloorCheck(0.3, ci_high)
    )
    assert judgement.verdict == verdict
    assert judgement.signals == signals
    assert "drop evidence" in judgement.reason


def test_prior_shift_needs_a_significant_and_material_move() -> None:
    base = {"reference_positives": 500, "reference_labelled": 100_000}
    moved = PriorCheck(80, 8_000, prior_effect=0.1, reference_regular=0.4, **base)
    assert moved.shifted()  # 1% vs 0.5%, and AP moved by 25% of its value
    noise = PriorCheck(45, 8_000, prior_effect=0.1, reference_regular=0.4, **base)
    assert not noise.shifted()  # 0.56% vs 0.5%: within the binomial noise
    immaterial = PriorCheck(80, 8_000, prior_effect=0.01, reference_regular=0.4, **base)
    assert not immaterial.shifted()
    no_ap = PriorCheck(0, 8_000, prior_effect=None, reference_regular=0.4, **base)
    assert no_ap.shifted()  # no fraud at all that day: the rate moved
