"""Segments side by side at one reference prior (app.metrics.segment_compare).

The values are the kernel's calibrated values of each segment's own sketch, the differences
exact; the intervals come from one joint bootstrap in which the whole model is the sum of its
parts. Coverage is measured in bench/segment_coverage.py (smoke run in tests/bench).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from app.metrics import InvalidInputError, build_sketch, evaluate_sketch, pool_sketches
from app.metrics._segment_cells import Counts, WholeCurve
from app.metrics.segment_compare import SegmentQuery, SegmentWindow, compare_segments
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array

Int8Array = npt.NDArray[np.int8]

METRICS = ("average_precision", "precision", "recall", "f1", "roc_auc", "fpr")


def _rows(seed: int, n: int, pi: float, mean: float) -> tuple[Float64Array, Int8Array]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < pi).astype(np.int8)
    scores = np.where(labels == 1, rng.normal(mean, 1.0, n), rng.normal(0.0, 1.0, n))
    return np.round(scores, 2).astype(np.float64), labels


def _model() -> tuple[CurveSketch, dict[str, CurveSketch]]:
    """Segments a and b and rows sent without a segment, threshold 1.5."""
    parts = {
        "a": _rows(1, 8000, 0.01, 2.0),
        "b": _rows(2, 4000, 0.04, 1.0),
        "": _rows(3, 3000, 0.02, 1.5),
    }
    scores = np.concatenate([p[0] for p in parts.values()])
    labels = np.concatenate([p[1] for p in parts.values()])
    whole = build_sketch(scores, labels, threshold=1.5)
    return whole, {n: build_sketch(*parts[n], threshold=1.5) for n in ("a", "b")}


def test_values_and_differences_are_exact_and_inside_their_intervals() -> None:
    whole, segments = _model()
    out = compare_segments(whole, segments, SegmentQuery(pi0=0.02, metrics=METRICS, replicates=300))
    whole_values = evaluate_sketch(whole, pi0=0.02).calibrated
    for name, sketch in segments.items():
        own = evaluate_sketch(sketch, pi0=0.02).calibrated
        for metric in METRICS:
            v, mine, theirs = out[name][metric], own[metric], whole_values[metric]
            assert mine is not None
            assert theirs is not None
            assert v.value == mine
            assert v.difference == mine - theirs
            assert v.ci is not None
            assert v.ci[0] <= mine <= v.ci[1]
            assert v.difference_ci is not None
            assert v.difference_ci[0] <= mine - theirs <= v.difference_ci[1]
            assert v.decided == (v.difference_ci[0] > 0 or v.difference_ci[1] < 0)


def test_against_a_chosen_segment_the_baseline_itself_has_no_interval() -> None:
    whole, segments = _model()
    query = SegmentQuery(pi0=0.02, metrics=METRICS, baseline="b", replicates=300)
    out = compare_segments(whole, segments, query)
    for metric in METRICS:
        a, b = out["a"][metric].value, out["b"][metric].value
        assert a is not None
        assert b is not None
        assert out["b"][metric].difference == 0.0
        assert out["b"][metric].difference_ci is None
        assert out["a"][metric].difference == a - b
    # Different models of fraud: a's AP at pi0 is clearly above b's, and the interval says so.
    assert out["a"]["average_precision"].decided is True


def test_a_segment_that_is_the_whole_model_differs_by_nothing() -> None:
    scores, labels = _rows(4, 5000, 0.02, 1.5)
    sketch = build_sketch(scores, labels, threshold=1.5)
    out = compare_segments(sketch, {"only": sketch}, SegmentQuery(pi0=0.02, metrics=METRICS))
    for metric in METRICS:
        assert out["only"][metric].difference == 0.0
        assert out["only"][metric].difference_ci == pytest.approx((0.0, 0.0), abs=1e-12)
        assert out["only"][metric].decided is False


def _place(whole: CurveSketch, part: CurveSketch) -> Counts:
    """``part`` on ``whole``'s curve, every entry a block of its own."""
    return WholeCurve.of(whole, np.arange(whole.scores.size)).place(part)


def test_placing_a_segment_on_the_whole_curve_keeps_its_counts() -> None:
    whole, segments = _model()
    for sketch in segments.values():
        cells = _place(whole, sketch)
        assert cells.positives.sum() == sketch.positives
        negatives = cells.negatives.sum() + cells.below
        assert negatives == pytest.approx(sketch.negatives, rel=1e-12)
        # Its frauds sit at their own scores.
        at = {float(s): int(p) for s, p in zip(sketch.scores, sketch.positives_at, strict=True)}
        placed = {float(s): int(p) for s, p in zip(whole.scores, cells.positives, strict=True) if p}
        assert placed == {s: p for s, p in at.items() if p}


def test_a_segment_without_frauds_is_undefined_with_a_reason() -> None:
    whole, segments = _model()
    scores, _ = _rows(5, 500, 0.0, 1.0)
    legit = build_sketch(scores, np.zeros(scores.size, dtype=np.int8), threshold=1.5)
    parts = np.concatenate([_rows(1, 8000, 0.01, 2.0)[0], scores])
    labels = np.concatenate([_rows(1, 8000, 0.01, 2.0)[1], np.zeros(scores.size, np.int8)])
    whole = build_sketch(parts, labels, threshold=1.5)
    out = compare_segments(
        whole, {"a": segments["a"], "quiet": legit}, SegmentQuery(pi0=0.02, metrics=METRICS)
    )
    assert out["quiet"]["average_precision"].value is None
    assert out["quiet"]["average_precision"].ci is None
    assert out["quiet"]["average_precision"].difference_ci is None
    assert "no frauds" in (out["quiet"]["average_precision"].reason or "")


def test_bad_queries_are_input_errors() -> None:
    whole, segments = _model()
    with pytest.raises(InvalidInputError, match="baseline"):
        compare_segments(whole, segments, SegmentQuery(pi0=0.02, metrics=METRICS, baseline="z"))
    with pytest.raises(InvalidInputError, match="replicates"):
        compare_segments(whole, segments, SegmentQuery(pi0=0.02, metrics=METRICS, replicates=2))
    other = build_sketch(*_rows(9, 2000, 0.05, 1.0), threshold=1.5)
    with pytest.raises(InvalidInputError, match="score"):
        compare_segments(whole, {"stranger": other}, SegmentQuery(pi0=0.02, metrics=METRICS))


def _week(shifts: list[float]) -> tuple[list[SegmentWindow], CurveSketch, dict[str, CurveSketch]]:
    """Seven windows of segments a, b and the rest; a's frauds score ``shift`` higher in each."""
    days = [
        {
            "a": _rows(10 + day, 3000, 0.01, 2.0 + shift),
            "b": _rows(20 + day, 1500, 0.04, 1.0),
            "": _rows(30 + day, 1000, 0.02, 1.5),
        }
        for day, shift in enumerate(shifts)
    ]

    def sketch(parts: list[tuple[Float64Array, Int8Array]]) -> CurveSketch:
        scores = np.concatenate([p[0] for p in parts])
        labels = np.concatenate([p[1] for p in parts])
        return build_sketch(scores, labels, threshold=1.5)

    windows = [
        SegmentWindow(sketch(list(d.values())), {n: sketch([d[n]]) for n in ("a", "b")})
        for d in days
    ]
    whole = sketch([p for d in days for p in d.values()])
    return windows, whole, {n: sketch([d[n] for d in days]) for n in ("a", "b")}


def test_windows_that_vary_more_than_their_rows_widen_the_intervals() -> None:
    # Segment a's frauds score a whole standard deviation higher on some days than on others:
    # spread between windows that drawing rows cannot see.
    windows, whole, segments = _week([-1.0, 1.0, -1.0, 1.0, 0.0, -1.0, 1.0])
    query = SegmentQuery(pi0=0.02, metrics=METRICS, replicates=300)
    rows_only = compare_segments(whole, segments, query)
    widened = compare_segments(whole, segments, query, windows)
    for metric in METRICS:
        before, after = rows_only["a"][metric], widened["a"][metric]
        assert after.value == before.value
        assert after.difference == before.difference
        assert before.ci is not None
        assert after.ci is not None
        assert after.ci[0] <= before.ci[0]
        assert after.ci[1] >= before.ci[1]
    ap_before, ap_after = rows_only["a"]["average_precision"], widened["a"]["average_precision"]
    assert ap_before.ci is not None
    assert ap_after.ci is not None
    assert ap_after.ci[1] - ap_after.ci[0] > 1.5 * (ap_before.ci[1] - ap_before.ci[0])
    # Two windows say nothing of their spread: the row bootstrap's intervals.
    assert compare_segments(whole, segments, query, windows[:2]) == rows_only


def test_a_window_threshold_the_pool_dropped_folds_into_the_gap_below() -> None:
    # Windows at two thresholds pool at one: the other window's threshold entry, without
    # frauds of its own, is no entry of the pooled curve.
    early = build_sketch(*_rows(40, 2000, 0.05, 1.5), threshold=1.013)
    late = build_sketch(*_rows(41, 2000, 0.05, 1.5), threshold=1.5)
    pooled = pool_sketches([early, late], threshold=1.5)
    assert 1.013 not in pooled.scores
    cells = _place(pooled, early)
    assert cells.positives.sum() == early.positives
    negatives = cells.negatives.sum() + cells.below
    assert negatives == pytest.approx(early.negatives, rel=1e-12)
