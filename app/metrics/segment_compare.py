"""Sub-populations side by side at one reference prior (Siblini et al. 2020, first use case).

Segments run at different fraud rates, so their measured precision, F1 or AP do not compare;
calibrated to the model's pi0 they do. This module gives each segment's calibrated metrics, and
their differences to the whole model or to one chosen segment, with percentile intervals from
one joint Poisson bootstrap.

A segment is part of the whole model, so the two are not independent: the bootstrap draws the
segments and *the rest of the model* (the whole minus every compared segment: rows of other
segments and rows sent without one) independently, and the whole's replicate is their sum. All
of them live on the whole's curve: each segment's counts are placed at the whole's entries (its
frauds and the negatives tied with them exactly; its negatives between two of its own frauds'
scores spread over the whole's cells there in proportion to the whole's negatives), and the
entries are merged into blocks of about equal positives, as the window bootstrap does
(:func:`app.metrics._resampling.merge_blocks`). Intervals are shifted by exact minus merged
value, so they are centred on the exact differences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics._kernel import Prepared, ReplicateCounts
from app.metrics._resampling import block_bounds, poisson_counts
from app.metrics._validation import check_pi0
from app.metrics.errors import InvalidInputError
from app.metrics.result import evaluate_sketch
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array, FloatingArray, Interval

MAX_BLOCKS = 256
"""Blocks of the whole's curve the replicates are drawn on (the window bootstrap uses 128 for one
population; several segments share these, so each keeps enough of its own positives)."""

Rows = tuple[Float64Array, Float64Array, Float64Array]
"""Per population: positives and negatives per block (one row per replicate), negatives below."""


@dataclass(frozen=True)
class _Cells:
    """One population's counts on the whole's curve: per entry its positives, the negatives
    scored between the entry above and it, those tied with it, and the negatives below all."""

    positives: Float64Array
    between: Float64Array
    tied: Float64Array
    below: float


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


def _place(whole: CurveSketch, part: CurveSketch) -> _Cells:
    """``part``'s counts at ``whole``'s entries (see the module docstring)."""
    size = whole.scores.size
    # Entry scores descend; locate each of the part's entries among the whole's.
    index = size - 1 - np.searchsorted(whole.scores[::-1], part.scores)
    if np.any(index < 0) or np.any(whole.scores[np.clip(index, 0, size - 1)] != part.scores):
        raise InvalidInputError("a segment's curve has a score the whole model's curve lacks")
    positives = np.zeros(size)
    np.add.at(positives, index, part.positives_at.astype(np.float64))
    tied = np.zeros(size)
    np.add.at(tied, index, part.negatives_tied.astype(np.float64))
    # The whole's negative cells in descending score order: between_0, tied_0, between_1, ...,
    # then below. A part's "between" count of entry i spans the cells after tied[index[i-1]]
    # up to between[index[i]]; its "below" count the cells after tied[index[-1]].
    flat = np.empty(2 * size + 1)
    flat[0:-1:2] = whole.negatives_between
    flat[1:-1:2] = whole.negatives_tied
    flat[-1] = whole.negatives_below
    span_ends = np.concatenate([2 * index, [2 * size]])  # inclusive last cell of each span
    span_starts = np.concatenate([[0], 2 * index + 2])
    counts = np.concatenate([part.negatives_between, [part.negatives_below]]).astype(np.float64)
    cumulative = np.concatenate([[0.0], np.cumsum(flat)])
    totals = cumulative[span_ends + 1] - cumulative[span_starts]
    spread = np.zeros_like(flat)
    for start, end, count, total in zip(span_starts, span_ends, counts, totals, strict=True):
        if count > 0.0 and total > 0.0:
            spread[start : end + 1] += flat[start : end + 1] * (count / total)
    return _Cells(
        positives=positives,
        between=spread[0:-1:2],
        tied=tied + spread[1:-1:2],
        below=float(spread[-1]),
    )


def _whole_cells(whole: CurveSketch) -> _Cells:
    return _Cells(
        positives=whole.positives_at.astype(np.float64),
        between=whole.negatives_between.astype(np.float64),
        tied=whole.negatives_tied.astype(np.float64),
        below=float(whole.negatives_below),
    )


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

    def merge(self, cells: _Cells) -> tuple[Float64Array, Float64Array, float]:
        """A population's positives and negatives per block (all negatives tied at the block's
        lowest score) and its negatives below."""
        positives = np.add.reduceat(cells.positives, self.starts)
        negatives = np.add.reduceat(cells.between + cells.tied, self.starts)
        return positives, negatives, cells.below


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


def compare_segments(
    whole: CurveSketch, segments: Mapping[str, CurveSketch], query: SegmentQuery
) -> dict[str, dict[str, SegmentValue]]:
    """Each segment's calibrated metrics at ``query.pi0``, and its difference to the
    baseline, with percentile intervals.

    ``whole`` is the whole model's sketch over the same rows; ``segments`` are disjoint parts of
    it. Returns segment -> metric -> :class:`SegmentValue`, the whole model under
    ``query.whole`` (its difference to the baseline segment; 0 without an interval when the
    whole is the baseline).
    """
    pi0, baseline, replicates, metrics = query.pi0, query.baseline, query.replicates, query.metrics
    p0 = check_pi0(pi0)
    if replicates < 10:
        raise InvalidInputError(f"replicates must be at least 10, got {replicates}")
    if baseline is not None and baseline not in segments:
        raise InvalidInputError(f"baseline {baseline!r} is not one of the compared segments")
    names = list(segments)
    parts = [_place(whole, segments[n]) for n in names]
    all_cells = _whole_cells(whole)
    rest = _Cells(
        positives=np.maximum(all_cells.positives - sum(p.positives for p in parts), 0.0),
        between=np.maximum(all_cells.between - sum(p.between for p in parts), 0.0),
        tied=np.maximum(all_cells.tied - sum(p.tied for p in parts), 0.0),
        below=max(all_cells.below - sum(p.below for p in parts), 0.0),
    )
    grid = _Blocks.of(whole, MAX_BLOCKS)
    scores = whole.scores[grid.ends]
    means = [grid.merge(c) for c in [*parts, rest]]
    rng = np.random.default_rng(query.seed)
    drawn = [
        (
            poisson_counts(pos, replicates, rng, 30.0).astype(np.float64),
            poisson_counts(neg, replicates, rng, 30.0).astype(np.float64),
            rng.poisson(below, size=replicates).astype(np.float64),
        )
        for pos, neg, below in means
    ]
    whole_draw = _total(drawn)
    # Rows: each segment's replicates, then the whole's; and the merged means likewise.
    populations = [*drawn[: len(names)], whole_draw]
    replicated = _columns(populations, scores, grid.threshold_index, p0)
    mean_rows = [(m[0][None, :], m[1][None, :], np.array([m[2]])) for m in means]
    whole_mean = _total(mean_rows)
    merged = _columns([*mean_rows[: len(names)], whole_mean], scores, grid.threshold_index, p0)

    exact = [evaluate_sketch(segments[n], pi0=p0).calibrated for n in names]
    exact.append(evaluate_sketch(whole, pi0=p0).calibrated)
    base_index = len(names) if baseline is None else names.index(baseline)
    alpha = (1.0 - query.level) / 2.0
    out: dict[str, dict[str, SegmentValue]] = {}
    # The segments, then the whole model (under query.whole), each against the baseline.
    for i, name in enumerate([*names, query.whole]):
        out[name] = {}
        for metric in metrics:
            rows = replicated[metric].reshape(len(names) + 1, replicates)
            merged_values = merged[metric]
            value, base = exact[i].get(metric), exact[base_index].get(metric)
            ci = _shifted(rows[i], value, float(merged_values[i]), alpha)
            difference = None if value is None or base is None else value - base
            difference_ci = None
            if difference is not None and i != base_index:
                merged_difference = float(merged_values[i] - merged_values[base_index])
                difference_ci = _shifted(
                    rows[i] - rows[base_index], difference, merged_difference, alpha
                )
            reason = None
            if value is None:
                reason = "undefined at this prior (no frauds, or no legitimate rows)"
            elif base is None:
                reason = "undefined for the baseline at this prior"
            out[name][metric] = SegmentValue(value, ci, difference, difference_ci, reason)
    return out


def _shifted(
    replicated: FloatingArray, centre: float | None, merged: float, alpha: float
) -> Interval | None:
    """Percentile interval of ``replicated``, moved by ``centre - merged``; None where the
    centre is undefined or more than alpha of the replicates are."""
    if centre is None or not math.isfinite(merged):
        return None
    finite = replicated[np.isfinite(replicated)]
    if finite.size < replicated.size * (1.0 - alpha):
        return None
    lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
    return (float(lo) + centre - merged, float(hi) + centre - merged)
