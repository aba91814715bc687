"""pi0 policy: the domain's pure rules, on hand-made window counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.monitoring.maturity import MaturityRule
from app.monitoring.pi0 import Pi0Policy, WindowLabels, estimate_pi0, needs_new_version

DAY0 = datetime(2026, 1, 1, tzinfo=UTC)


def _w(day: int, labelled: int, positives: int, coverage: float = 1.0) -> WindowLabels:
    return WindowLabels(DAY0 + timedelta(days=day), labelled, positives, coverage)


def test_historical_pi0_is_count_weighted_not_a_mean_of_ratios() -> None:
    history = [_w(0, 1_000, 10), _w(1, 9_000, 270)]  # ratios 0.01 and 0.03
    estimate = estimate_pi0(Pi0Policy("historical"), history)
    assert estimate.value == pytest.approx(280 / 10_000)  # not (0.01 + 0.03) / 2
    assert (estimate.windows_used, estimate.rows_used, estimate.positives_used) == (2, 10_000, 280)


def test_windows_under_the_label_coverage_are_left_out() -> None:
    history = [_w(0, 1_000, 10), _w(1, 500, 100, coverage=0.3)]
    estimate = estimate_pi0(
        Pi0Policy("historical", mature=MaturityRule(min_label_coverage=0.8).is_mature), history
    )
    assert estimate.value == pytest.approx(0.01)
    assert estimate.windows_used == 1


def test_lookback_reference_and_fixed_policies() -> None:
    history = [_w(i, 1_000, 10 * (i + 1)) for i in range(5)]
    lookback = estimate_pi0(Pi0Policy("historical", lookback_windows=2), history)
    assert lookback.value == pytest.approx((40 + 50) / 2_000)
    reference = Pi0Policy(
        "reference", reference_start=DAY0 + timedelta(1), reference_end=DAY0 + timedelta(3)
    )
    assert estimate_pi0(reference, history).value == pytest.approx((20 + 30) / 2_000)
    assert estimate_pi0(Pi0Policy("fixed", fixed=0.002), history).value == 0.002


def test_no_pi0_without_positives_or_labels() -> None:
    assert estimate_pi0(Pi0Policy("historical"), []).value is None
    nothing = estimate_pi0(Pi0Policy("historical"), [_w(0, 1_000, 0)])
    assert nothing.value is None
    assert nothing.reason == "history has no positives"


def test_a_new_version_only_past_the_relative_tolerance() -> None:
    assert needs_new_version(None, 0.01, 0.1)
    assert not needs_new_version(0.01, 0.0109, 0.1)
    assert needs_new_version(0.01, 0.0111, 0.1)
    assert needs_new_version(0.01, 0.0089, 0.1)
    assert not needs_new_version(0.01, None, 0.1)
