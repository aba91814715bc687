"""Sub-populations side by side at one reference prior (Siblini et al. 2020, first use case).

Segments run at different fraud rates, so their measured precision, F1 or AP do not compare;
calibrated to the model's pi0 they do. This module gives each segment's calibrated metrics, and
their differences to the whole model or to one chosen segment, with percentile intervals from
one joint Poisson bootstrap.

A segment is part of the whole model, so the two are not independent: the bootstrap draws the
segments and *the rest of the model* (the whole minus every compared segment: rows of other
segments and rows sent without one) independently, and the whole's replicate is their sum. All
of them live on the whole's curve, merged into blocks of about equal positives as the window
bootstrap does (:func:`app.metrics._resampling.block_bounds`; the placing is
:mod:`app.metrics._segment_cells`). Intervals are shifted by exact minus merged value, so they
are centred on the exact differences.

Rows are not independent: frauds come in bursts within a window. Given the period's windows,
a second bootstrap draws whole windows, and each interval is widened by how much more its value
varies across them than across rows (:mod:`app.metrics._segment_windows`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from app.metrics._kernel import Prepared, ReplicateCounts
from app.metrics._resampling import block_bounds, poisson_counts
from app.metrics._segment_cells import Counts, WholeCurve, rest_of
from app.metrics._segment_windows import MIN_WINDOWS, SegmentWindow, draw_windows, widening
from app.metrics._validation import check_pi0
from app.metrics.errors import InvalidInputError
from app.metrics.result import evaluate_sketch
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array, FloatingArray, Interval

__all__ = ["MAX_BLOCKS", "SegmentQuery", "SegmentValue", "SegmentWindow", "compare_segments"]

MAX_BLOCKS = 256
"""Blocks of the whole's curve the replicates are drawn on (the window bootstrap uses 128 for one
population; several segments share these, so each keeps enough of its own positives)."""

Rows = tuple[Float64Array, Float64Array, Float64Array]
"""Per population: positives and negatives per block (one row per replicate), negatives below."""


@dataclass(frozen=True)
class SegmentValue:
    """One segment's calibrated metric and its difference to the baseline."""

    value: float | None
    ci: Interval | None
    difference: float | None
    difference_ci: Interval | None
    reason: str | None

    @property
    def decided(self) -> bool | None:
        """Whether the difference's interval leaves out 0 (None without an interval)."""
        if self.difference_ci is None:
            return None
        return self.difference_ci[0] > 0.0 or self.difference_ci[1] < 0.0


@dataclass(frozen=True)
class _Blocks:
    """Entries merged into blocks ending at ``ends`` (the threshold's entry ends one)."""

    ends: npt.NDArray[np.intp]
    starts: npt.NDArray[np.intp]
    threshold_index: int

    @classmethod
    def of(cls, whole: CurveSketch, max_blocks: int) -> _Blocks:
        ends, starts = block_bounds(whole, max_blocks)
        return cls(ends, starts, int(np.searchsorted(ends, whole.threshold_index)))


def _columns(
    blocks: Sequence[Rows],
    scores: Float64Array,
    threshold_index: int,
    pi0: float,
) -> dict[str, FloatingArray]:
    """Calibrated metrics (and the prior-invariant ones) of stacked replicate rows."""
    positives = np.concatenate([b[0] for b in blocks])
    negatives = np.concatenate([b[1] for b in blocks])
    below = np.concatenate([b[2] for b in blocks])
    counts = ReplicateCounts(
        positives_at=positives,
        negatives_tied=negatives,
        negatives_between=np.zeros_like(negatives),
        negatives_below=below,
        threshold_index=threshold_index,
        scores=scores,
    )
    prepared = Prepared.of(counts, sequential=False)
    columns = prepared.calibrated(pi0)
    columns.update(prepared.invariant)
    return columns


@dataclass(frozen=True)
class SegmentQuery:
    """What to compare: ``metrics`` calibrated to ``pi0``, each segment against ``baseline``
    (``None``: the whole model; else one of the segments), and the bootstrap's knobs."""

    pi0: float
    metrics: Sequence[str]
    baseline: str | None = None
    whole: str = "all"
    """The whole model's key in the answer (it is answered beside the segments)."""
    seed: int = 0
    replicates: int = 1000
    level: float = 0.95


def _total(populations: Sequence[Rows]) -> Rows:
    """The populations' counts added: the whole model's (its parts are disjoint)."""
    positives, negatives, below = zip(*populations, strict=True)
    return (
        np.sum(np.stack(positives), axis=0),
        np.sum(np.stack(negatives), axis=0),
        np.sum(np.stack(below), axis=0),
    )


def _means(curve: WholeCurve, held: Counts, parts: Sequence[CurveSketch | None]) -> list[Rows]:
    """The parts' counts and the rest's (``held``, the rows the parts belong to, minus the
    parts) on the whole's blocks, each as one row; a part absent from a window has no rows."""
    blocks = curve.starts.size
    nothing = Counts(np.zeros(blocks), np.zeros(blocks), 0.0)
    placed = [curve.place(p) if p is not None else nothing for p in parts]
    return [
        (c.positives[None, :], c.negatives[None, :], np.array([c.below]))
        for c in [*placed, rest_of(held, placed)]
    ]


def _stacked(per_window: Sequence[Sequence[Rows]]) -> list[Rows]:
    """Per population, its windows' rows stacked (one row per window)."""
    populations = [[w[p] for w in per_window] for p in range(len(per_window[0]))]
    return [
        (
            np.concatenate([rows[0] for rows in each]),
            np.concatenate([rows[1] for rows in each]),
            np.concatenate([rows[2] for rows in each]),
        )
        for each in populations
    ]


@dataclass(frozen=True)
class _Replicated:
    """Every population's metrics (the segments, then the whole) per replicate: the row
    bootstrap's, its value on the merged blocks, and the window bootstrap's (None: too few
    windows)."""

    rows: dict[str, FloatingArray]
    merged: dict[str, FloatingArray]
    windows: dict[str, FloatingArray] | None
    window_count: int


def _replicate(
    whole: CurveSketch,
    segments: Mapping[str, CurveSketch],
    query: SegmentQuery,
    windows: Sequence[SegmentWindow],
) -> _Replicated:
    """The row bootstrap's replicates, the merged values, and the window bootstrap's (drawn
    after the rows' from the same seeded generator)."""
    names = list(segments)
    grid = _Blocks.of(whole, MAX_BLOCKS)
    scores = whole.scores[grid.ends]
    curve = WholeCurve.of(whole, grid.starts)
    means = _means(curve, curve.own(), [segments[n] for n in names])
    rng = np.random.default_rng(query.seed)
    drawn = [
        (
            poisson_counts(pos[0], query.replicates, rng, 30.0).astype(np.float64),
            poisson_counts(neg[0], query.replicates, rng, 30.0).astype(np.float64),
            rng.poisson(below[0], size=query.replicates).astype(np.float64),
        )
        for pos, neg, below in means
    ]

    def columns(populations: Sequence[Rows]) -> dict[str, FloatingArray]:
        # The segments' rows, then the whole's (the sum of every part, the rest included).
        segment_rows = list(populations[: len(names)])
        return _columns(
            [*segment_rows, _total(populations)], scores, grid.threshold_index, query.pi0
        )

    by_window = None
    if len(windows) >= MIN_WINDOWS:
        per_window = [
            _means(curve, curve.place(w.whole), [w.segments.get(n) for n in names]) for w in windows
        ]
        by_window = columns(draw_windows(_stacked(per_window), query.replicates, rng))
    return _Replicated(columns(drawn), columns(means), by_window, len(windows))


def compare_segments(
    whole: CurveSketch,
    segments: Mapping[str, CurveSketch],
    query: SegmentQuery,
    windows: Sequence[SegmentWindow] = (),
) -> dict[str, dict[str, SegmentValue]]:
    """Each segment's calibrated metrics at ``query.pi0``, and its difference to the
    baseline, with percentile intervals.

    ``whole`` is the whole model's sketch over the same rows; ``segments`` are disjoint parts of
    it. ``windows``: the period's windows, whose sketches pooled are ``whole`` and
    ``segments``; with at least :data:`MIN_WINDOWS` of them the intervals widen by the spread
    the windows show beyond the rows' (:mod:`app.metrics._segment_windows`). Returns
    segment -> metric -> :class:`SegmentValue`, the whole model under ``query.whole`` (its
    difference to the baseline segment; 0 without an interval when the whole is the baseline).
    """
    p0 = check_pi0(query.pi0)
    if query.replicates < 10:
        raise InvalidInputError(f"replicates must be at least 10, got {query.replicates}")
    baseline = query.baseline
    if baseline is not None and baseline not in segments:
        raise InvalidInputError(f"baseline {baseline!r} is not one of the compared segments")
    names = list(segments)
    replicated = _replicate(whole, segments, replace(query, pi0=p0), windows)
    exact = [evaluate_sketch(segments[n], pi0=p0).calibrated for n in names]
    exact.append(evaluate_sketch(whole, pi0=p0).calibrated)
    base_index = len(names) if baseline is None else names.index(baseline)
    alpha = (1.0 - query.level) / 2.0
    out: dict[str, dict[str, SegmentValue]] = {}
    # The segments, then the whole model (under query.whole), each against the baseline.
    for i, name in enumerate([*names, query.whole]):
        out[name] = {}
        for metric in query.metrics:
            spreads = _Spreads.of(replicated, metric, len(names) + 1)
            value, base = exact[i].get(metric), exact[base_index].get(metric)
            ci = spreads.interval(i, None, value, alpha, replicated.window_count)
            difference = None if value is None or base is None else value - base
            difference_ci = None
            if difference is not None and i != base_index:
                difference_ci = spreads.interval(
                    i, base_index, difference, alpha, replicated.window_count
                )
            reason = None
            if value is None:
                reason = "undefined at this prior (no frauds, or no legitimate rows)"
            elif base is None:
                reason = "undefined for the baseline at this prior"
            out[name][metric] = SegmentValue(value, ci, difference, difference_ci, reason)
    return out


@dataclass(frozen=True)
class _Spreads:
    """One metric's replicates per population (rows: the segments, then the whole)."""

    rows: FloatingArray
    merged: FloatingArray
    windows: FloatingArray | None

    @classmethod
    def of(cls, replicated: _Replicated, metric: str, populations: int) -> _Spreads:
        by_window = replicated.windows
        return cls(
            rows=replicated.rows[metric].reshape(populations, -1),
            merged=replicated.merged[metric],
            windows=None if by_window is None else by_window[metric].reshape(populations, -1),
        )

    def interval(
        self, i: int, base: int | None, centre: float | None, alpha: float, window_count: int
    ) -> Interval | None:
        """Population ``i``'s value (``base`` None) or its difference to ``base``: the row
        bootstrap's percentile interval, its deviations widened by the windows' dispersion,
        around ``centre``."""
        rows, merged = self.rows[i], float(self.merged[i])
        if base is not None:
            rows, merged = rows - self.rows[base], merged - float(self.merged[base])
        if centre is None or not math.isfinite(merged):
            return None
        finite = rows[np.isfinite(rows)]
        if finite.size < rows.size * (1.0 - alpha):
            return None
        widen = 1.0
        if self.windows is not None:
            spread = self.windows[i] if base is None else self.windows[i] - self.windows[base]
            widen = widening(finite, spread, window_count, alpha)
        lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
        return (centre + widen * (float(lo) - merged), centre + widen * (float(hi) - merged))
