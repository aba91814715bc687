"""The draws of bench/label_feeds.py that need no feed: the partition of the score axis, the
review ramp, the horizon-conditioned delays and the final sketch (pure numpy, tested alone).

A window's legitimate rows are one multinomial over the partition made of the bin edges, the
threshold and the frauds' scores; both its bin counts and its curve sketch are sums of that one
draw, which is what makes them agree exactly and costs O(frauds + bins) instead of O(rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from app.metrics import CurveSketch
from app.metrics.types import BoolArray, Float64Array, Int64Array
from bench.simulation import THRESHOLD


@dataclass(frozen=True)
class Partition:
    """A window's rows on the score axis cut at ``points`` (ascending: the bin edges, the
    threshold, the frauds' scores) into slots, ascending: the interval below ``points[0]``,
    ``points[0]`` itself, the next interval, ..., the interval above ``points[-1]``. Legitimate
    rows lie in the intervals (slot ``2 i``), frauds on the points (slot ``2 k + 1``)."""

    points: Float64Array
    rows: Int64Array
    """Rows per slot."""
    lower: Float64Array
    """Each slot's lowest score (-inf for the first)."""

    @property
    def legit(self) -> Int64Array:
        cells: Int64Array = self.rows[0::2]
        return cells

    @property
    def flagged(self) -> BoolArray:
        above: BoolArray = self.lower >= THRESHOLD
        return above


def partition(
    rng: np.random.Generator, legit: int, edges: Float64Array, fraud_scores: Float64Array
) -> Partition:
    """``legit`` N(0, 1) rows and the frauds (at ``fraud_scores``) on the partition of the score
    axis by ``edges``, the threshold and the frauds' scores: one multinomial draw."""
    points = np.union1d(np.union1d(edges, fraud_scores), [THRESHOLD])
    # P(legit > point) from the upper tail: exact where the frauds' scores sit.
    beyond = ndtr(-points)
    cells = rng.multinomial(legit, -np.diff(np.concatenate(([1.0], beyond, [0.0]))))
    rows = np.empty(2 * points.size + 1, dtype=np.int64)
    rows[0::2] = cells
    rows[1::2] = np.bincount(np.searchsorted(points, fraud_scores), minlength=points.size)
    lower = np.concatenate(([-np.inf], np.repeat(points, 2)))
    return Partition(points, rows, lower)


def queue_mean(lo: Float64Array, hi: Float64Array, share: float) -> Float64Array:
    """The review ramp's mean over queue positions [lo, hi] (0 = the queue's top, 1 = its end):
    from 1 at the top, falling linearly with the slope that makes its mean over the queue
    ``share`` (bench/label_feeds.py's docstring)."""
    if share <= 0.0:
        return np.zeros_like(lo)
    slope = 2.0 * (1.0 - share) if share >= 0.5 else 1.0 / (2.0 * share)
    end = 1.0 / slope if slope > 0 else np.inf

    def integral(q: Float64Array) -> Float64Array:
        c = np.minimum(q, end)
        out: Float64Array = c - slope * c * c / 2.0
        return out

    width = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = (integral(hi) - integral(lo)) / width
    at_point = np.clip(1.0 - slope * lo, 0.0, 1.0)
    result: Float64Array = np.where(width > 0, mean, at_point)
    return result


def review_probability(part: Partition, share: float, *, by_score: bool) -> Float64Array:
    """Per slot, the chance an investigator reviews one of its rows: ``share`` for every flagged
    row, or (``by_score``) the queue ramp's mean over the slot's span of the queue."""
    flagged = part.flagged
    if not by_score:
        return np.where(flagged, share, 0.0)
    queue = max(int(part.rows[flagged].sum()), 1)
    # Flagged slots are the top ones, so the rows above a flagged slot are all in the queue.
    above = part.rows[::-1].cumsum()[::-1] - part.rows
    ramp = queue_mean(above / queue, (above + part.rows) / queue, share)
    return np.where(flagged, ramp, 0.0)


def truncated_lognormal(
    rng: np.random.Generator, median: Float64Array, sigma: float, cap: Float64Array
) -> Float64Array:
    """Log-normal delays conditioned on ``<= cap`` (a redraw of the tail, as one inverse-CDF
    draw: the uniform is confined to the CDF's range below the cap)."""
    reach = ndtr(np.log(cap / median) / sigma)
    u = (1.0 - rng.random(median.size)) * reach  # in (0, reach]: never ndtri(0)
    delays: Float64Array = median * np.exp(sigma * ndtri(u))
    return delays


def final_sketch(part: Partition, point: Int64Array, reported: BoolArray) -> CurveSketch:
    """The window's sketch from its partition: reported frauds positive, the rest negative."""
    k = part.points.size
    positives = np.bincount(point[reported], minlength=k).astype(np.int64)
    negatives = part.rows.copy()
    negatives[1::2] -= positives  # never-reported frauds stay negatives at their own scores
    total = int(negatives.sum())
    strictly_above = total - np.cumsum(negatives)  # per slot, negatives in the slots above it
    entries = np.flatnonzero((positives > 0) | (part.points == THRESHOLD))[::-1]
    above = strictly_above[2 * entries + 1]
    tied = negatives[2 * entries + 1]
    previous = np.concatenate(([0], above[:-1] + tied[:-1]))
    return CurveSketch.of_counts(
        n=int(part.rows.sum()),
        threshold=THRESHOLD,
        scores=part.points[entries],
        positives_at=positives[entries],
        negatives_tied=tied,
        negatives_between=above - previous,
        negatives_below=total - int(above[-1] + tied[-1]),
    )
