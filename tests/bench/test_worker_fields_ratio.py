"""bench.worker's ratio of the window's time with amounts and cards to its time without, with
its interval over the paired repeats."""

from __future__ import annotations

import pytest

from bench.worker import Timing, fields_ratio


def test_the_ratio_is_the_totals_and_its_interval_holds_it() -> None:
    budgeted = Timing([0.20, 0.22, 0.19, 0.30, 0.21, 0.20, 0.23, 0.20, 0.19])
    valued = Timing([0.25, 0.26, 0.24, 0.36, 0.25, 0.26, 0.27, 0.24, 0.24])
    ratio, low, high = fields_ratio(budgeted, valued)
    assert ratio == pytest.approx(sum(valued.runs) / sum(budgeted.runs))
    assert low < ratio < high
    assert high - low < 0.1  # paired: the slow fourth repeat slowed both


def test_a_pairing_lost_widens_the_interval() -> None:
    """The same times with one side's slow repeat moved: the pairs no longer share their
    moment, and the interval widens (what pairing the repeats buys)."""
    budgeted = Timing([0.20, 0.22, 0.19, 0.30, 0.21, 0.20, 0.23, 0.20, 0.19])
    valued = Timing([0.25, 0.26, 0.24, 0.36, 0.25, 0.26, 0.27, 0.24, 0.24])
    shuffled = Timing([0.36, 0.26, 0.24, 0.25, 0.25, 0.26, 0.27, 0.24, 0.24])
    _, low, high = fields_ratio(budgeted, valued)
    _, shuffled_low, shuffled_high = fields_ratio(budgeted, shuffled)
    assert shuffled_high - shuffled_low > 2 * (high - low)
