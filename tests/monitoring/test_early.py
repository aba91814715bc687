"""Early evidence and the continued drop statistic (app/monitoring/early.py), and the alert
state a user sees (app/monitoring/alerts.py::settle)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from app.metrics import build_sketch, evaluate_sketch
from app.metrics.blocks import BLOCK_ROWS
from app.metrics.mixture import ScoreHistogram
from app.metrics.reporting import Arrivals
from app.metrics.tilt import binned_average_precision
from app.monitoring.alerts import EarlyContinuation, SegmentAlert, settle
from app.monitoring.detector import (
    DetectorState,
    WindowIncrement,
    continue_detector,
    excursion_start,
)
from app.monitoring.early import MeasuredNow, reporting_cells
from app.monitoring.early_looks import LabelledRows, Looks, arrival_looks
from app.monitoring.early_views import feedback_precision, wilson
from app.monitoring.vocabulary import LABEL_SOURCE_CODES, UNKNOWN_LABEL_TIME

DAY0 = datetime(2026, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)
DAY_MICROS = 86_400_000_000


def _micros(instant: datetime) -> int:
    return (instant - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _steps(*increments: float) -> list[WindowIncrement]:
    return [WindowIncrement(DAY0 + i * DAY, value) for i, value in enumerate(increments)]


def test_a_label_counts_from_the_first_look_at_or_after_it() -> None:
    end = DAY0 + DAY
    labelled = np.array(
        [
            _micros(end - timedelta(hours=3)),  # during the window: look 0
            _micros(end),  # at its end: the next day's, look 1
            _micros(end + timedelta(hours=1)),  # the next day: look 1
            _micros(end + 3 * DAY - timedelta(microseconds=1)),  # by three days after: look 3
            _micros(end + 3 * DAY),  # exactly three days after: the fourth day's, look 4
            UNKNOWN_LABEL_TIME,
        ]
    )
    assert arrival_looks(labelled, end, DAY).tolist() == [0, 1, 1, 3, 4, -1]
    looks = Looks(as_of=DAY0 + 5 * DAY, length=DAY)
    assert looks.look_of(DAY0) == 4  # ended at day 1, looked at on days 1..5
    assert looks.look_of(DAY0 + 4 * DAY) == 0  # just ended
    assert looks.look_of(DAY0 + 5 * DAY) == -1  # still open


def test_labelled_rows_become_arrivals_and_feedback_precision() -> None:
    feedback, chargeback = LABEL_SOURCE_CODES["feedback"], LABEL_SOURCE_CODES["chargeback"]
    end = DAY0 + DAY
    next_day = _micros(end + timedelta(hours=5))
    rows = LabelledRows(  # ten bins of width 0.1, flagged from 0.8 on
        scores=np.array([0.95, 0.9, 0.91, 0.25, 0.85]),
        labels=np.array([1, 0, 0, 1, 0], dtype=np.int8),
        labelled_at=np.array([next_day, next_day, next_day, _micros(end + 9 * DAY), next_day]),
        sources=np.array([feedback, feedback, feedback, chargeback, feedback], dtype=np.int8),
        edges=np.linspace(0.1, 0.9, 9),
        threshold=0.8,
    )
    arrivals = rows.arrivals(end, DAY)
    flagged_bins = np.arange(10) >= 8
    at_one = feedback_precision(arrivals, flagged_bins, 1)
    assert at_one is not None
    assert (at_one.confirmed, at_one.reviewed, at_one.value) == (1, 4, 0.25)
    assert at_one.interval == pytest.approx(wilson(1, 4))
    assert feedback_precision(arrivals, flagged_bins, 0) is None  # nothing reviewed by then
    # The chargeback is stamped 9 days after the window's end: it counts from look 10.
    assert arrivals.frauds_per_bin(10, 9).sum() == 1
    assert arrivals.frauds_per_bin(10, 10).sum() == 2


def test_cells_split_each_side_of_the_threshold_at_its_frauds_median() -> None:
    frauds = np.array([0, 1, 2, 3, 4, 10, 20, 30, 40], dtype=np.float64)
    legit = np.full(9, 100.0)
    cells = reporting_cells(5, frauds, legit)
    assert cells.flagged.tolist() == [False] * 5 + [True] * 4
    assert cells.count == 4
    assert cells.of_bin[:5].max() == 1
    assert set(cells.of_bin[5:].tolist()) == {2, 3}
    assert cells.reference_shares.sum() == pytest.approx(1.0)
    assert (cells.reference_shares > 0).all()  # smoothed: a fraud anywhere is possible


def _binning_correction(scores: np.ndarray, frauds: np.ndarray, edges: np.ndarray) -> float:
    """Exact minus binned calibrated AP at pi0 = 0.01, computed directly."""
    exact = evaluate_sketch(build_sketch(scores, frauds, threshold=0.9), pi0=0.01)
    value = exact.calibrated["average_precision"]
    assert value is not None
    bins = np.searchsorted(edges, scores, side="right")
    f1 = np.bincount(bins[frauds == 1], minlength=edges.size + 1).astype(np.float64)
    f0 = np.bincount(bins[frauds == 0], minlength=edges.size + 1).astype(np.float64)
    binned = binned_average_precision(f1 / f1.sum(), f0 / f0.sum(), 0.01)[0]
    return value - float(binned)


def test_the_binning_correction_scales_the_labels_so_far_up_by_their_completeness() -> None:
    # 2,000 frauds in 200,000 rows, half of them just below the threshold; a week in, 95% of
    # the flagged bins' frauds are labelled (feedback) and 30% of the missed bins'
    # (chargebacks). Read off the labels as they are, the correction weighs the flagged frauds
    # three times too much and counts the hidden ones legitimate.
    edges = np.linspace(0.05, 0.95, 19)
    completeness = np.where(np.arange(edges.size + 1) >= 18, 0.95, 0.3)
    as_they_are, scaled_up = [], []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        frauds = (rng.random(200_000) < 0.01).astype(np.int8)
        scores = np.clip(rng.normal(0.3 + 0.6 * frauds, 0.1), 0.0, 1.0)
        bins = np.searchsorted(edges, scores, side="right")
        labelled = frauds * (rng.random(frauds.size) < completeness[bins])
        so_far = np.bincount(bins[labelled == 1], minlength=edges.size + 1).astype(np.float64)
        rows = np.bincount(bins, minlength=edges.size + 1).astype(np.int64)
        now = MeasuredNow.of(build_sketch(scores, labelled, threshold=0.9), edges, so_far)
        plain = now.ap_shift(rows, 0.01, np.ones(edges.size + 1))
        # Every fraud worth one, nothing hidden: the window's own correction, exactly.
        assert plain == pytest.approx(_binning_correction(scores, labelled, edges), abs=1e-12)
        complete = _binning_correction(scores, frauds, edges)
        as_they_are.append(abs(plain - complete))
        scaled_up.append(abs(now.ap_shift(rows, 0.01, completeness) - complete))
    assert np.mean(scaled_up) < np.mean(as_they_are) / 3


def test_the_statistic_continues_from_the_judged_state_and_pages_on_early_evidence() -> None:
    judged = DetectorState(drop=4.0)
    continued = continue_detector(judged, _steps(3.0, 4.0), threshold=10.0, was_paging=False)
    assert continued.drop == 11.0
    assert continued.paging
    # Healthy early evidence floors at 0, as the judged statistic does.
    quiet = continue_detector(judged, _steps(-9.0, 1.0), threshold=10.0, was_paging=False)
    assert (quiet.drop, quiet.paging) == (1.0, False)


def test_a_page_holds_across_looks_until_the_end_of_the_sequence_falls_to_half() -> None:
    # Older windows' evidence is healthy (the statistic sits at 0 among them), the newest
    # windows' holds the page: 7 is above half the threshold, so the previous look's page holds.
    steps = _steps(-2.0, -1.0, 3.0, 4.0)
    assert continue_detector(DetectorState(), steps, threshold=10.0, was_paging=True).paging
    assert not continue_detector(DetectorState(), steps, threshold=10.0, was_paging=False).paging
    low = _steps(2.0, 2.0)  # 4 < 5: the page clears
    assert not continue_detector(DetectorState(), low, threshold=10.0, was_paging=True).paging


def _paging_alert(drop: float, paging: bool) -> SegmentAlert:
    return SegmentAlert(
        segment="all",
        reference_version=1,
        state="drop" if paging else "ok",
        signals=("cusum",) if paging else (),
        detector=DetectorState(drop=drop, paging=paging),
        threshold=10.0,
        last_window=DAY0,
        episode_start=DAY0 if paging else None,
        reason="judged",
    )


def test_settle_says_early_while_only_early_evidence_pages_and_keeps_the_episode() -> None:
    before = _paging_alert(3.0, False)
    judged = _paging_alert(3.0, False)
    continued = continue_detector(
        judged.detector, _steps(4.0, 4.0), threshold=10.0, was_paging=False
    )
    first = DAY0 + 5 * DAY
    early = settle(judged, EarlyContinuation(continued, 2, DAY0 + 9 * DAY, first), before=before)
    assert (early.state, early.signals, early.episode_start) == ("drop", ("early",), first)
    assert early.reason is not None
    assert early.reason.startswith("early evidence")
    # The windows matured: the judged statistic pages now. Same episode, signal cusum.
    judged_now = _paging_alert(12.0, True)
    handed = continue_detector(judged_now.detector, [], threshold=10.0, was_paging=True)
    after = settle(judged_now, EarlyContinuation(handed, 0, DAY0 + 70 * DAY), before=early)
    assert (after.state, after.signals, after.episode_start) == ("drop", ("cusum",), first)


def test_settle_clears_when_the_newest_evidence_outweighs_a_judged_drop() -> None:
    judged = _paging_alert(6.0, True)
    continued = continue_detector(
        judged.detector, _steps(-3.0, -2.0), threshold=10.0, was_paging=True
    )
    settled = settle(judged, EarlyContinuation(continued, 2, DAY0), before=judged)
    assert (settled.state, settled.signals, settled.episode_start) == ("ok", (), None)
    assert settled.reason is not None
    assert "outweigh" in settled.reason


def test_the_excursion_starts_where_the_statistic_last_left_zero() -> None:
    steps = _steps(1.0, -3.0, 2.0, 4.0)  # above 0, back to 0, then up from the third window
    assert excursion_start(DetectorState(), steps) == DAY0 + 2 * DAY
    assert excursion_start(DetectorState(), _steps(-1.0, -2.0)) is None
    # Already above 0 after the judged windows: the excursion began before these windows.
    assert excursion_start(DetectorState(drop=3.0), _steps(1.0, 1.0)) is None


def test_settling_again_does_not_wrap_the_reason_again() -> None:
    judged = _paging_alert(3.0, False)
    continued = continue_detector(
        judged.detector, _steps(4.0, 5.0), threshold=10.0, was_paging=False
    )
    first = settle(judged, EarlyContinuation(continued, 2, DAY0), before=judged)
    again = settle(first, EarlyContinuation(continued, 2, DAY0), before=first)
    assert again.reason == first.reason
    assert first.judged_reason == "judged"


def test_a_window_larger_than_a_block_is_counted_as_one() -> None:
    """Past BLOCK_ROWS rows the arrivals are counted block by block and merged: the same
    arrivals as one count of every row; and the score counts likewise."""
    rng = np.random.default_rng(3)
    n = BLOCK_ROWS + 12_345
    end = DAY0 + DAY
    labels = (rng.random(n) < 0.01).astype(np.int8)
    scores = np.round(rng.random(n), 3)
    labelled_at = _micros(end) + rng.integers(-DAY_MICROS, 30 * DAY_MICROS, n)
    labelled_at[rng.random(n) < 0.05] = UNKNOWN_LABEL_TIME
    sources = rng.integers(0, 4, n).astype(np.int8)
    edges = np.linspace(0.05, 0.95, 19)
    rows = LabelledRows(scores, labels, labelled_at, sources, edges, threshold=0.8)
    looks = arrival_looks(labelled_at, end, DAY)
    fraud = labels == 1
    at_once = Arrivals.of(
        frauds=(np.searchsorted(edges, scores[fraud], side="right"), looks[fraud], sources[fraud]),
        cleared=((scores >= 0.8)[~fraud], looks[~fraud], sources[~fraud]),
    )
    assert rows.arrivals(end, DAY).to_bytes() == at_once.to_bytes()
    bins = np.searchsorted(edges, scores, side="right")
    counts = ScoreHistogram.of(edges, scores, labels, scores[:1000])
    assert counts.positives.tolist() == np.bincount(bins[fraud], minlength=20).tolist()
    assert counts.negatives.tolist() == np.bincount(bins[~fraud], minlength=20).tolist()
    assert counts.unlabelled.tolist() == np.bincount(bins[:1000], minlength=20).tolist()
