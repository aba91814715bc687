"""A segment's counts on the whole model's curve, for the segment comparison.

A segment's sketch (pooled over a period, or one window's) has its own entries; the comparison
draws every population on the whole's entries. Its frauds, and the negatives tied with them, sit
at the whole's entries exactly; its negatives between two of its own entries are spread over the
whole's cells there in proportion to the whole's negatives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array


@dataclass(frozen=True)
class _Entries:
    """A part's entries that the whole has (``index``: where, in the whole's), with their
    counts as floats."""

    index: npt.NDArray[np.intp]
    positives: Float64Array
    tied: Float64Array
    between: Float64Array
    below: float

    @classmethod
    def within(cls, whole: CurveSketch, part: CurveSketch) -> _Entries:
        """``part``'s entries located among ``whole``'s. An entry the whole lacks without
        positives (one window's threshold, dropped when windows of different thresholds were
        pooled) folds into the gap below it, as pooling folds it; one with positives is an
        error."""
        size = whole.scores.size
        # Entry scores descend; locate each of the part's entries among the whole's.
        at = size - 1 - np.searchsorted(whole.scores[::-1], part.scores)
        known = (at >= 0) & (whole.scores[np.clip(at, 0, size - 1)] == part.scores)
        if np.any(part.positives_at[~known] > 0):
            raise InvalidInputError("a segment's curve has a score the whole model's curve lacks")
        tied = part.negatives_tied.astype(np.float64)
        between = part.negatives_between.astype(np.float64)
        kept = np.flatnonzero(known)
        # Negatives at or above each entry; a kept entry's gap is all strictly above it that
        # no kept entry above holds.
        reach = np.cumsum(between + tied)
        held = reach[kept]
        gaps = held - tied[kept] - np.concatenate(([0.0], held[:-1]))
        below = float(part.negatives_below) + float(reach[-1] - (held[-1] if kept.size else 0.0))
        return cls(
            index=at[kept],
            positives=part.positives_at[kept].astype(np.float64),
            tied=tied[kept],
            between=gaps,
            below=below,
        )


@dataclass(frozen=True)
class Counts:
    """One population on the whole's blocks: positives and negatives per block (all of a
    block's negatives tied at its lowest score), and its negatives below the last entry."""

    positives: Float64Array
    negatives: Float64Array
    below: float


@dataclass(frozen=True)
class WholeCurve:
    """The whole model's curve cut into blocks (``starts``: each block's first entry), with
    what placing a part on it needs: each entry's block, and the running total of the whole's
    negative cells. The cells, in descending score order: between_0, tied_0, between_1, ...,
    then below; cell boundary ``x`` has ``cumulative[x]`` negatives before it."""

    sketch: CurveSketch
    starts: npt.NDArray[np.intp]
    block_of_entry: npt.NDArray[np.intp]
    cumulative: Float64Array

    @classmethod
    def of(cls, whole: CurveSketch, starts: npt.NDArray[np.intp]) -> WholeCurve:
        size = whole.scores.size
        flat = np.empty(2 * size + 1)
        flat[0:-1:2] = whole.negatives_between
        flat[1:-1:2] = whole.negatives_tied
        flat[-1] = whole.negatives_below
        block_of_entry = np.searchsorted(starts, np.arange(size), side="right") - 1
        return cls(whole, starts, block_of_entry, np.concatenate([[0.0], np.cumsum(flat)]))

    def own(self) -> Counts:
        """The whole's own counts."""
        whole = self.sketch
        return Counts(
            positives=np.add.reduceat(whole.positives_at.astype(np.float64), self.starts),
            negatives=np.add.reduceat(
                (whole.negatives_between + whole.negatives_tied).astype(np.float64), self.starts
            ),
            below=float(whole.negatives_below),
        )

    def place(self, part: CurveSketch) -> Counts:
        """``part``'s counts on the blocks (see the module docstring)."""
        size, blocks = self.sketch.scores.size, self.starts.size
        entries = _Entries.within(self.sketch, part)
        at = self.block_of_entry[entries.index]
        # bincount with weights counts in float64 (its stubs say int).
        positives = np.bincount(at, weights=entries.positives, minlength=blocks).astype(np.float64)
        tied = np.bincount(at, weights=entries.tied, minlength=blocks).astype(np.float64)
        # The part's "between" count of its entry i spans the whole's cells after the tied cell
        # of its entry i - 1 up to the between cell of entry i; its "below" count the cells
        # after its last entry's tied cell. Each spreads in proportion to the whole's cells.
        span_ends = np.concatenate([2 * entries.index, [2 * size]])  # inclusive
        span_starts = np.concatenate([[0], 2 * entries.index + 2])
        counts = np.concatenate([entries.between, [entries.below]])
        totals = self.cumulative[span_ends + 1] - self.cumulative[span_starts]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where((counts > 0.0) & (totals > 0.0), counts / totals, 0.0)
        done = np.concatenate([[0.0], np.cumsum(share * totals)])

        def spread_before(x: npt.NDArray[np.intp]) -> Float64Array:
            """The part's spread negatives in the cells before boundary ``x``."""
            span = np.searchsorted(span_ends, x, side="left")  # spans ending before x
            inside = np.minimum(span, span_starts.size - 1)
            partial = np.where(
                (span < span_starts.size) & (span_starts[inside] < x),
                share[inside] * (self.cumulative[x] - self.cumulative[span_starts[inside]]),
                0.0,
            )
            out: Float64Array = done[span] + partial
            return out

        bounds = spread_before(np.concatenate([2 * self.starts, [2 * size, 2 * size + 1]]))
        return Counts(
            positives=positives,
            negatives=tied + np.diff(bounds[:-1]),
            below=float(bounds[-1] - bounds[-2]),
        )


def rest_of(held: Counts, parts: Sequence[Counts]) -> Counts:
    """``held`` minus its compared parts: rows of other segments and rows without one."""
    return Counts(
        positives=np.maximum(held.positives - sum(p.positives for p in parts), 0.0),
        negatives=np.maximum(held.negatives - sum(p.negatives for p in parts), 0.0),
        below=max(held.below - sum(p.below for p in parts), 0.0),
    )
