"""A window's scores as a mixture of the reference's fraud and legitimate score distributions.

Under a pure prior shift the class-conditional score distributions P(score | fraud) and
P(score | legit) stay what they were in the reference; only the mix moves. So a window's scores,
labelled or not, are a sample of the mixture ``pi f1 + (1 - pi) f0``, and:

* **pi** is its maximum-likelihood mixing weight (the EM prior re-estimation of Saerens, Latinne
  and Decaestecker 2002, here solved by Newton's method on the same concave log-likelihood),
  and, more crudely, the adjusted classify-and-count at the threshold of Forman (2005):
  ``(flagged share - FPR) / (TPR - FPR)``;
* the **expected metrics** of the window are the reference's curve re-expressed at that pi
  (the skew transform of Lampert & Gancarski, eq. 3);
* a window whose scores the fitted mixture does **not** explain had P(score | class) move: a
  label-free warning (:mod:`app.metrics.misfit`: a G-test against the fitted mixture, and a
  one-parameter likelihood-ratio test against a tilt of the fraud scores).

Scores are summarised per window as counts in fixed bins (:func:`bin_edges`, chosen once per
model): the fit on ~65 bins measured as accurate as one on the exact scores with the true
densities (bench/nowcast.py), at a few hundred bytes a window, and bins merge by addition.
:mod:`app.metrics.nowcast` turns the fit into estimates with intervals.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics.blocks import blocks
from app.metrics.errors import InvalidInputError
from app.metrics.types import Float64Array, Int64Array

BODY_LEVELS = tuple(float(q) for q in np.linspace(0.02, 0.98, 49))
"""Quantile levels of the bins' body: every 2% of the scores."""
TAIL_STEP = 2.0**-0.5
"""Above the 98th percentile, each level leaves sqrt(1/2) as many scores above it: the fraud
scores live in the top tail, so that is where the bins are fine."""
MIN_ROWS_ABOVE = 3.0
"""The finest tail level still has about this many of the edges' window's scores above it."""


def bin_edges(scores: npt.ArrayLike, threshold: float) -> Float64Array:
    """Bin edges for a model, from one window's scores (all of them, labelled or not).

    The 2% quantiles, then geometrically finer quantiles up the top tail while about three
    scores lie above, and the threshold (so that counts at it are exact).
    """
    s = np.sort(np.asarray(scores, dtype=np.float64))
    if s.size < 2 or not np.isfinite(s).all():
        raise InvalidInputError("bin edges need at least two finite scores")
    levels = list(BODY_LEVELS)
    tail = 1.0 - BODY_LEVELS[-1]
    while tail * TAIL_STEP * s.size >= MIN_ROWS_ABOVE:
        tail *= TAIL_STEP
        levels.append(1.0 - tail)
    edges = np.unique(np.concatenate([np.quantile(s, levels), [threshold]]))
    return edges.astype(np.float64)


def histogram(scores: npt.ArrayLike, edges: Float64Array) -> Int64Array:
    """Counts of ``scores`` in the ``len(edges) + 1`` bins: bin ``b`` holds the scores in
    ``[edges[b - 1], edges[b])`` (bin 0 everything below the first edge), so a score equal to
    the threshold counts with the scores above it, as the threshold's ``>=`` does."""
    values = np.asarray(scores, dtype=np.float64)
    counts: Int64Array = np.zeros(edges.size + 1, dtype=np.int64)
    for block in blocks(values.size):  # a large window's bin numbers in 8 MB pieces
        counts += np.bincount(
            np.searchsorted(edges, values[block], side="right"), minlength=edges.size + 1
        )
    return counts


_COUNTS_MAGIC = b"CMSC"
_COUNTS_VERSION = 1


@dataclass(frozen=True)
class ScoreHistogram:
    """A window's rows per bin by label: frauds, legitimate rows, rows not labelled yet.

    The nowcast reads all three together (every row counts); the reference reads the labelled
    two (its class-conditional score distributions). Windows merge by addition.
    """

    positives: Int64Array
    negatives: Int64Array
    unlabelled: Int64Array

    def __post_init__(self) -> None:
        shapes = {self.positives.shape, self.negatives.shape, self.unlabelled.shape}
        if len(shapes) != 1 or self.positives.ndim != 1:
            raise InvalidInputError("score counts must be three 1-d arrays of one length")

    @classmethod
    def of(
        cls,
        edges: Float64Array,
        scores: npt.ArrayLike,
        labels: npt.ArrayLike,
        unlabelled: npt.ArrayLike,
    ) -> ScoreHistogram:
        """Count labelled ``scores`` (by ``labels``, 1 = fraud) and ``unlabelled`` scores."""
        s = np.asarray(scores, dtype=np.float64)
        y = np.asarray(labels) != 0
        if s.shape != y.shape:
            raise InvalidInputError("scores and labels must have one length")
        # One search per labelled row (the window's cost: ~35 ms per million rows), and one
        # more per fraud (few).
        positives = histogram(s[y], edges)
        return cls(positives, histogram(s, edges) - positives, histogram(unlabelled, edges))

    @property
    def rows(self) -> Int64Array:
        """Every row per bin, labelled or not."""
        total: Int64Array = self.positives + self.negatives + self.unlabelled
        return total

    @classmethod
    def pooled(cls, parts: Sequence[ScoreHistogram]) -> ScoreHistogram:
        """The counts of several windows together (on one model's bins)."""
        if not parts:
            raise InvalidInputError("nothing to pool")
        return cls(
            np.sum([p.positives for p in parts], axis=0).astype(np.int64),
            np.sum([p.negatives for p in parts], axis=0).astype(np.int64),
            np.sum([p.unlabelled for p in parts], axis=0).astype(np.int64),
        )

    def classes(self, edges: Float64Array) -> ClassHistogram:
        """The labelled rows as a reference's class counts on ``edges``."""
        return ClassHistogram(edges, self.positives, self.negatives)

    def to_bytes(self) -> bytes:
        """A versioned header (magic, version, bins) and the three arrays as little-endian int64:
        ~1.8 KB for the ~75 bins of a model with a million rows a window."""
        header = _COUNTS_MAGIC + struct.pack("<HI", _COUNTS_VERSION, self.positives.size)
        body = np.concatenate([self.positives, self.negatives, self.unlabelled])
        return header + body.astype("<i8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> ScoreHistogram:
        """Inverse of :meth:`to_bytes`; rejects unknown versions and truncated data."""
        if len(data) < 10 or data[:4] != _COUNTS_MAGIC:
            raise InvalidInputError("not calmon score counts")
        version, bins = struct.unpack_from("<HI", data, 4)
        if version != _COUNTS_VERSION or len(data) != 10 + 3 * 8 * bins:
            raise InvalidInputError(f"score counts of version {version}, {len(data)} bytes")
        body = np.frombuffer(data, dtype="<i8", offset=10).astype(np.int64).reshape(3, bins)
        return cls(body[0].copy(), body[1].copy(), body[2].copy())


def edges_to_bytes(edges: Float64Array) -> bytes:
    """A model's bin edges as little-endian float64."""
    return np.asarray(edges, dtype="<f8").tobytes()


def edges_from_bytes(data: bytes) -> Float64Array:
    """Inverse of :func:`edges_to_bytes`."""
    if len(data) % 8:
        raise InvalidInputError("bin edges must be whole float64 values")
    edges: Float64Array = np.frombuffer(data, dtype="<f8").astype(np.float64)
    return edges


@dataclass(frozen=True)
class ClassHistogram:
    """A reference's labelled scores per bin (of ``edges``): frauds and legitimate rows."""

    edges: Float64Array
    positives: Int64Array
    negatives: Int64Array

    def __post_init__(self) -> None:
        if self.positives.shape != self.negatives.shape or self.positives.ndim != 1:
            raise InvalidInputError("positive and negative counts must be 1-d, of one length")
        if self.positives.size != self.edges.size + 1:
            raise InvalidInputError("counts need one bin more than there are edges")
        if self.positives.sum() == 0 or self.negatives.sum() == 0:
            raise InvalidInputError("a reference needs labelled frauds and legitimate rows")

    def densities(self) -> tuple[Float64Array, Float64Array]:
        """``(f1, f0)``: each class's share of its rows per bin."""
        f1 = self.positives / self.positives.sum()
        f0 = self.negatives / self.negatives.sum()
        return f1.astype(np.float64), f0.astype(np.float64)

    def fraud_positions(self) -> Float64Array:
        """Each bin's middle score, standardised by the frauds' mean and spread: the axis along
        which :func:`goodness_of_fit` tilts the fraud scores (for normal scores, a tilt along
        it is exactly a shift of their mean). The open outer bins take the width of their
        neighbour."""
        e = self.edges
        width = np.diff(e)
        first = e[0] - (width[0] if width.size else 1.0) / 2.0
        last = e[-1] + (width[-1] if width.size else 1.0) / 2.0
        middles = np.concatenate([[first], (e[:-1] + e[1:]) / 2.0, [last]])
        f1, _ = self.densities()
        mean = float((f1 * middles).sum())
        spread = float(np.sqrt((f1 * (middles - mean) ** 2).sum())) or 1.0
        positions: Float64Array = (middles - mean) / spread
        return positions


def fit_prior(counts: Float64Array, f1: Float64Array, f0: Float64Array) -> Float64Array:
    """Maximum-likelihood mixing weight of each row of ``counts`` (shape ``(R, B)``; ``f1``,
    ``f0`` the same shape or ``(B,)``).

    The log-likelihood ``sum_b n_b log(pi f1_b + (1 - pi) f0_b)`` is concave in pi, so its
    maximum on [0, 1] is a boundary (where the slope there says so) or the root of its
    derivative: three steps of Saerens et al.'s EM (which converges to the same point, one slow
    step at a time) and then Newton's method, safeguarded by bisection.
    """
    p1 = np.broadcast_to(f1, np.atleast_2d(counts).shape)
    p0 = np.broadcast_to(f0, p1.shape)
    # A bin neither class ever reaches (in a resampled reference) says nothing about pi.
    n = np.where(p1 + p0 > 0, np.atleast_2d(counts), 0).astype(np.float64)
    d = p1 - p0
    # Bins without rows add nothing (and their ratio may be 0/0): computed as 0 where the
    # bins are empty, the same floats as taking the ratio everywhere and masking it after.
    rows_in = n > 0

    def slope(pi: Float64Array) -> tuple[Float64Array, Float64Array]:
        mix = pi[:, None] * d
        mix += p0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.divide(d, mix, out=np.zeros_like(mix), where=rows_in)
        weighted = n * ratio
        grad = weighted.sum(axis=1)
        weighted *= ratio
        return grad, -weighted.sum(axis=1)

    rows = n.shape[0]
    total = n.sum(axis=1)
    at_zero, _ = slope(np.zeros(rows))
    at_one, _ = slope(np.ones(rows))
    boundary = (at_zero <= 0) | (at_one >= 0)  # the maximum is at 0 or 1: nothing to solve
    # A few EM steps (Saerens et al.'s update) bring pi to its scale from anywhere in (0, 1)...
    pi = np.full(rows, 0.5)
    for _ in range(3):
        mix = pi[:, None] * d
        mix += p0
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.divide(pi[:, None] * p1, mix, out=np.zeros_like(mix), where=rows_in)
        pi = np.clip(share.sum(axis=1) / np.where(total > 0, total, 1.0), 1e-12, 1 - 1e-12)
    # ...then Newton's method, kept inside the bracket where the slope changes sign.
    low, high = np.zeros(rows), np.ones(rows)
    done = boundary.copy()
    for _ in range(50):
        grad, hess = slope(pi)
        low = np.where(grad > 0, pi, low)
        high = np.where(grad < 0, pi, high)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = pi - grad / hess
        inside = np.isfinite(step) & (step >= low) & (step <= high)
        new = np.where(inside, step, (low + high) / 2.0)
        settled = np.abs(new - pi) <= 1e-12 * np.maximum(pi, 1e-9)
        pi = np.where(done, pi, new)
        done |= settled
        if done.all():
            break
    pi = np.where(at_zero <= 0, 0.0, pi)
    fitted: Float64Array = np.where(at_one >= 0, 1.0, pi)
    return fitted


def adjusted_count(
    flagged_share: Float64Array, tpr: Float64Array, fpr: Float64Array
) -> Float64Array:
    """Forman's adjusted classify-and-count: ``(q - FPR) / (TPR - FPR)``, clipped to [0, 1]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = (flagged_share - fpr) / (tpr - fpr)
    clipped: Float64Array = np.clip(np.where(np.isfinite(raw), raw, np.nan), 0.0, 1.0)
    return clipped


def log_likelihood(n: Float64Array, mix: Float64Array) -> Float64Array:
    """The multinomial log-likelihood of counts ``n`` under the shares ``mix`` (rows: fits)."""
    with np.errstate(divide="ignore"):
        terms = np.where(n > 0, n * np.log(np.where(mix > 0, mix, 1.0)), 0.0)
    total: Float64Array = terms.sum(axis=-1)
    return total
