"""Maturity and reference choice: which windows are judged, and which form the reference."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.monitoring.maturity import MaturityRule
from app.monitoring.pi0 import WindowLabels
from app.monitoring.reference import ReferenceRule, ReferenceSpec, choose_reference

DAY0 = datetime(2026, 1, 1, tzinfo=UTC)
COVERAGE = MaturityRule(min_label_coverage=0.8)
RULE = ReferenceRule(windows=3, min_positives=100, maturity=COVERAGE)


def _w(day: int, positives: int = 50, labelled: int = 5_000, coverage: float = 1.0) -> WindowLabels:
    return WindowLabels(DAY0 + timedelta(days=day), labelled, positives, coverage)


def _days(choice_windows: tuple[WindowLabels, ...]) -> list[int]:
    return [(w.window_start - DAY0).days for w in choice_windows]


@pytest.mark.parametrize(
    ("window", "reason"),
    [
        (_w(0, coverage=0.3), "coverage 0.300 below min_label_coverage 0.800"),
        # Chargebacks came first, nothing confirmed legitimate yet.
        (_w(0, positives=40, labelled=40, coverage=0.9), "no labelled negatives"),
        (WindowLabels(DAY0, 0, 0, None), "coverage 0.000"),
        (_w(0), None),
        # A mature window without positives is mature (it just carries no AP evidence).
        (_w(0, positives=0), None),
    ],
)
def test_maturity(window: WindowLabels, reason: str | None) -> None:
    found = COVERAGE.immaturity(window)
    if reason is None:
        assert found is None
        assert COVERAGE.is_mature(window)
    else:
        assert found is not None
        assert reason in found


def test_a_label_horizon_matures_a_window_on_the_models_clock_only() -> None:
    # A fraud-only feed: no explicit legitimate labels, so coverage says nothing; the window
    # ends a day after it starts and its rows count as legitimate 30 days after that.
    rule = MaturityRule(min_label_coverage=0.8, horizon=timedelta(days=30))
    fraud_only = _w(0, positives=40, labelled=40, coverage=0.01)
    due = DAY0 + timedelta(days=31)
    assert rule.due(DAY0) == due
    waiting = rule.immaturity(fraud_only)
    assert waiting is not None
    assert "nothing received" in waiting
    assert "label_horizon_days" in waiting
    early = MaturityRule(0.8, timedelta(days=30), clock=due - timedelta(microseconds=1))
    assert not early.is_mature(fraud_only)
    assert MaturityRule(0.8, timedelta(days=30), clock=due).is_mature(fraud_only)
    # Hourly windows end an hour after they start.
    hourly = MaturityRule(0.8, timedelta(days=1), clock=due, window_length=timedelta(hours=1))
    assert hourly.due(DAY0) == DAY0 + timedelta(hours=25)


def test_automatic_reference_takes_the_first_usable_windows_until_it_has_enough() -> None:
    history = [
        _w(0, positives=0),  # no positives: not usable
        _w(1, coverage=0.5),  # not mature
        _w(2, positives=10),
        _w(3, positives=30),
        _w(4, positives=40),  # 3 usable windows, but only 80 positives
        _w(5, positives=40),  # now 4 windows and 120 positives
        _w(6),
    ]
    choice = choose_reference(ReferenceSpec(1, "automatic"), RULE, history)
    assert choice.ready
    assert _days(choice.windows) == [2, 3, 4, 5]
    assert choice.positives == 120
    not_yet = choose_reference(ReferenceSpec(1, "automatic"), RULE, history[:5])
    assert not not_yet.ready
    assert "3 of 3 usable windows, 80 of 100 positives" in not_yet.reason


def test_automatic_reference_from_a_date_after_a_retrain() -> None:
    history = [_w(day) for day in range(10)]
    spec = ReferenceSpec(2, "automatic", start=DAY0 + timedelta(days=6))
    assert _days(choose_reference(spec, RULE, history).windows) == [6, 7, 8]


def test_period_reference_waits_for_a_mature_window_after_it() -> None:
    spec = ReferenceSpec(2, "period", start=DAY0 + timedelta(days=1), end=DAY0 + timedelta(days=3))
    pending = choose_reference(spec, RULE, [_w(0), _w(1), _w(2), _w(3, coverage=0.1)])
    assert not pending.ready
    assert "after the reference period" in pending.reason
    ready = choose_reference(spec, RULE, [_w(0), _w(1), _w(2), _w(3)])
    assert ready.ready
    assert _days(ready.windows) == [1, 2]


def test_recent_reference_counts_back_from_when_it_was_set() -> None:
    history = [_w(day) for day in range(10)]
    spec = ReferenceSpec(3, "recent", as_of=DAY0 + timedelta(days=8))
    assert _days(choose_reference(spec, RULE, history).windows) == [5, 6, 7]
    empty = choose_reference(ReferenceSpec(3, "recent", as_of=DAY0), RULE, history)
    assert not empty.ready
