"""Resampling helpers shared by the bootstrap and the reference null model.

Both draw many replicates of a sketch's counts; both merge a long sketch into blocks of about
equal positives first, so that a replicate costs O(blocks) draws whatever the window's size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics._kernel import AmountCounts, ReplicateCounts
from app.metrics._poisson_inversion import poisson_inverted
from app.metrics.result import counts_of
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float32Array, Float64Array, Int64Array


def block_bounds(
    sketch: CurveSketch, max_entries: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """``(ends, starts)`` of blocks of consecutive entries with about equal positives, the
    threshold's entry and the last one ending a block."""
    cum_pos = np.cumsum(sketch.positives_at)
    targets = np.linspace(0, cum_pos[-1], max_entries, endpoint=False)[1:]
    ends = np.searchsorted(cum_pos, targets, side="left")
    ends = np.unique(np.concatenate((ends, [sketch.threshold_index, sketch.scores.size - 1])))
    return ends, np.concatenate(([0], ends[:-1] + 1))


def merge_blocks(sketch: CurveSketch, max_entries: int) -> ReplicateCounts:
    """Blocks of consecutive entries with about equal positives; the threshold ends a block.

    A block becomes one tie group: its positives at its lowest score, tied with all of its
    negatives. Counts at block ends (so AP's, F1's and the threshold's) stay exact, and a
    replicate draws two large Poisson counts per block instead of many small ones.
    """
    ends, starts = block_bounds(sketch, max_entries)
    negatives = np.add.reduceat(sketch.negatives_tied + sketch.negatives_between, starts)

    def row(a: Int64Array) -> Float64Array:
        return np.asarray(a, dtype=np.float64)[None, :]

    amounts = None
    if sketch.amounts is not None:  # a block's amount is the sum of its entries'
        amounts = AmountCounts(
            positive_at=np.add.reduceat(sketch.amounts.positive_at, starts)[None, :],
            negative_flagged=np.array([sketch.amounts.negative_flagged]),
        )
    return ReplicateCounts(
        positives_at=row(np.add.reduceat(sketch.positives_at, starts)),
        negatives_tied=row(negatives),
        negatives_between=np.zeros((1, ends.size)),
        negatives_below=np.array([float(sketch.negatives_below)]),
        threshold_index=int(np.searchsorted(ends, sketch.threshold_index)),
        scores=sketch.scores[ends],
        amounts=amounts,
        entities=_entity_counts(sketch.entities, max_entries),
    )


def _entity_counts(entities: CurveSketch | None, max_entries: int) -> ReplicateCounts | None:
    """An entity sketch's counts for resampling: merged like its window's when as long."""
    if entities is None:
        return None
    if entities.scores.size > max_entries:
        return merge_blocks(entities, max_entries)
    return counts_of(entities)


def poisson_counts(
    lam: Float64Array, size: int, rng: np.random.Generator, normal_above: float
) -> Float32Array:
    """``size`` rows of independent Poisson(lam) counts (normal for large lam: see bootstrap),
    the small means by inversion (app/metrics/_poisson_inversion.py, 3-7x faster than numpy's
    sampler, the same distribution)."""
    lam32 = lam.astype(np.float32)
    large = lam >= normal_above
    if large.all():  # merged sketches: skip the column scatter
        z = rng.standard_normal((size, lam.size), dtype=np.float32)
        drawn: Float32Array = np.maximum(z * np.sqrt(lam32) + lam32, np.float32(0.0))
        return drawn
    out = np.zeros((size, lam.size), dtype=np.float32)
    # Small means are counts of tied rows, so few distinct values: a scalar mean per value is
    # several times faster in numpy than an array of means.
    for value in np.unique(lam[(lam > 0) & ~large]):
        cols = np.flatnonzero(lam == value)
        out[:, cols] = poisson_inverted(float(value), (size, cols.size), rng)
    cols = np.flatnonzero(large)
    if cols.size:
        mean = lam32[cols]
        z = rng.standard_normal((size, cols.size), dtype=np.float32)
        out[:, cols] = np.maximum(z * np.sqrt(mean) + mean, np.float32(0.0))
    return out


@dataclass(frozen=True)
class Moments:
    """Mean and variance of the amounts in each cell (0 where a cell holds no row)."""

    mean: Float32Array
    variance: Float32Array

    @classmethod
    def of(cls, count: Float64Array, total: Float64Array, squares: Float64Array) -> Moments:
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(count > 0, total / count, 0.0)
            variance = np.where(count > 0, np.maximum(squares / count - mean * mean, 0.0), 0.0)
        return cls(mean.astype(np.float32), variance.astype(np.float32))

    def draw(self, drawn: Float32Array, rng: np.random.Generator) -> Float32Array:
        """Each cell's amount given its drawn count ``C``: ``C m + sqrt(C v) z``, at least 0."""
        z = rng.standard_normal(drawn.shape, dtype=np.float32)
        amount: Float32Array = np.maximum(
            drawn * self.mean + np.sqrt(drawn * self.variance) * z, np.float32(0.0)
        )
        return amount

    @staticmethod
    def skip(shape: tuple[int, ...], rng: np.random.Generator) -> None:
        """Take from ``rng`` what :meth:`draw` of a ``shape`` of counts takes, and nothing
        else: the draws after it see the stream as they would after :meth:`draw`."""
        rng.standard_normal(shape, dtype=np.float32)


@dataclass(frozen=True)
class AmountSpread:
    """The amounts' moments on a bootstrap's (merged) entries and at the threshold: what a
    replicate draws its amounts from, given its drawn counts (:meth:`Moments.draw`)."""

    positive: Moments
    negative: Moments
    wanted: bool = True
    """False: the replicates' amounts go unused (see :func:`resample`)."""

    @classmethod
    def of(cls, sketch: CurveSketch, counts: ReplicateCounts) -> AmountSpread | None:
        """None without amounts. ``counts`` are the sketch's, merged or not: merged blocks sum
        the amounts of their entries as they sum the counts."""
        amounts = sketch.amounts
        if amounts is None:
            return None
        ends = np.searchsorted(-sketch.scores, -counts.scores)  # last entry of each block
        starts = np.concatenate(([0], ends[:-1] + 1))

        def blocks(a: Float64Array) -> Float64Array:
            summed: Float64Array = np.add.reduceat(a, starts)
            return summed

        j = sketch.threshold_index
        flagged = int((sketch.negatives_tied + sketch.negatives_between)[: j + 1].sum())
        return cls(
            positive=Moments.of(
                counts.positives_at[0], blocks(amounts.positive_at), blocks(amounts.positive_sq_at)
            ),
            negative=Moments.of(
                np.array([float(flagged)]),
                np.array([amounts.negative_flagged]),
                np.array([amounts.negative_flagged_sq]),
            ),
        )


def resample(
    counts: ReplicateCounts,
    size: int,
    rng: np.random.Generator,
    normal_above: float,
    spread: AmountSpread | None,
) -> ReplicateCounts:
    """``size`` Poisson-bootstrap replicates of one-row ``counts``, one a row (amounts through
    ``spread``). Replicates are float32: half the memory traffic of the metric formulas, and
    rounding far below any interval's width.

    The entity sketch's counts are drawn on their own (its rows are entities).

    A spread not :attr:`AmountSpread.wanted` (the card bootstrap draws the value metrics
    instead, after these replicates): no amounts are computed, but their normals are taken
    from ``rng`` all the same, so the draws after them, and every interval, are what they
    were with the amounts.
    """
    entities = None
    if counts.entities is not None:
        entities = resample(counts.entities, size, rng, normal_above, None)
    positives_at = poisson_counts(counts.positives_at[0], size, rng, normal_above)
    negatives_tied = poisson_counts(counts.negatives_tied[0], size, rng, normal_above)
    negatives_between = poisson_counts(counts.negatives_between[0], size, rng, normal_above)
    amounts = None
    if spread is not None and not spread.wanted:
        Moments.skip(positives_at.shape, rng)
        Moments.skip((size,), rng)
    elif spread is not None:
        j = counts.threshold_index
        flagged = (negatives_tied + negatives_between)[:, : int(j) + 1].sum(axis=1)
        amounts = AmountCounts(
            positive_at=spread.positive.draw(positives_at, rng),
            negative_flagged=spread.negative.draw(flagged, rng),
        )
    return ReplicateCounts(
        positives_at=positives_at,
        negatives_tied=negatives_tied,
        negatives_between=negatives_between,
        negatives_below=rng.poisson(counts.negatives_below[0], size=size).astype(np.float32),
        threshold_index=counts.threshold_index,
        scores=counts.scores,
        amounts=amounts,
        entities=entities,
    )
