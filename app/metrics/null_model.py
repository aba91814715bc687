"""What a window's calibrated average precision would be if the model were as good as its reference.

Under the hypothesis "nothing changed but the fraud rate", a window of ``P`` positives and ``N``
negatives is a sample of ``P`` scores from the reference's positive score distribution and
``N`` from its negative one. Its calibrated AP then has a sampling distribution that depends on
``P`` and ``N`` (at 25 positives its standard error is about a quarter of the value, it is
skewed, and its mean sits above the population value by an amount that grows with ``N/P``), so
a deficit means something only against that distribution, drawn at the window's own counts.

:class:`NullModel` draws it: the reference sketch is cut into blocks of about equal positives
(as the bootstrap does), a replicate draws the window's ``P`` positives over the blocks
(multinomial; past 4 positives a block, independent Poisson counts as in the Poisson bootstrap,
and the multinomial's normal approximation once every block expects 30 or more) and its
negatives per block (Poisson; normal for large means), and evaluates the calibrated AP of the
blocked replicate. Blocking moves every replicate by about the same amount, so the draws are
shifted by (exact reference AP - blocked reference AP), the bootstrap's centring. Checked
against windows drawn from the true Gaussian model (tests/metrics): mean and standard deviation
within a few hundredths of a standard deviation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics._poisson_inversion import NORMAL_ABOVE, poisson_or_normal
from app.metrics._resampling import merge_blocks
from app.metrics._validation import check_pi0
from app.metrics.errors import InvalidInputError
from app.metrics.result import counts_of, evaluate_sketch
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array

IntArray = npt.NDArray[np.intp]

_GUIDE_PER_BLOCK = 4
"""Guide cells per block for :func:`categorical_picks` (as the Poisson tables have)."""

DEFAULT_BLOCKS = 64
"""Blocks of the reference: 64 keep a 1,000-replicate draw at 1.3 to 1.7 ms (5 to 50 frauds,
measured at stop 50); 128 and 1,024 gave the same means and standard deviations within the
draws' own noise."""


@dataclass(frozen=True, eq=False)
class NullModel:
    """A reference curve prepared for drawing windows (see the module docstring).

    Attributes
    ----------
    pi0:
        Prior the calibrated AP is expressed at.
    value:
        The reference's own calibrated AP at ``pi0`` (exact, from its sketch).
    positives:
        Labelled positives the reference holds.
    """

    pi0: float
    value: float
    positives: int
    negatives: int
    _positive_share: Float64Array
    _negative_share: Float64Array
    _shift: float

    @classmethod
    def of(cls, reference: CurveSketch, *, pi0: float, blocks: int = DEFAULT_BLOCKS) -> NullModel:
        """Prepare ``reference`` (e.g. a pooled reference period) for draws at ``pi0``.

        Raises
        ------
        InvalidInputError
            If the reference lacks positives or negatives (its AP is then undefined).
        """
        p0 = check_pi0(pi0)
        exact = evaluate_sketch(reference, pi0=p0).calibrated["average_precision"]
        if exact is None or reference.negatives == 0:
            raise InvalidInputError("a null model needs a reference with both classes")
        counts = merge_blocks(reference, blocks) if reference.scores.size > blocks else None
        if counts is None:
            counts = counts_of(reference)
            negatives = counts.negatives_tied[0] + counts.negatives_between[0]
        else:
            negatives = counts.negatives_tied[0]  # a block is one tie group
        positives = counts.positives_at[0]
        below = float(counts.negatives_below[0])
        positive_share = positives / positives.sum()
        negative_share = np.concatenate((negatives, [below])) / (negatives.sum() + below)
        blocked = grouped_calibrated_ap(
            positive_share[None, :], negative_share[None, :-1], 1.0, p0
        )[0]
        return cls(
            pi0=p0,
            value=float(exact),
            positives=reference.positives,
            negatives=reference.negatives,
            _positive_share=positive_share,
            _negative_share=negative_share,
            _shift=float(exact) - float(blocked),
        )

    def draw(self, positives: int, negatives: int, *, replicates: int, seed: int) -> Float64Array:
        """Calibrated AP of ``replicates`` windows of ``positives`` and ``negatives`` rows drawn
        from the reference, on the scale of :attr:`value`."""
        if positives < 1 or negatives < 1:
            raise InvalidInputError(
                f"a window needs positives and negatives, got {positives} and {negatives}"
            )
        if replicates < 10:
            raise InvalidInputError(f"replicates must be at least 10, got {replicates}")
        rng = np.random.default_rng(seed)
        hits = _multinomial(rng, positives, self._positive_share, replicates)
        false = poisson_or_normal(negatives * self._negative_share[:-1], replicates, rng)
        values = grouped_calibrated_ap(hits, false, float(negatives), self.pi0)
        shifted: Float64Array = values + self._shift
        return shifted

    def standard_error(self, *, replicates: int = 200, seed: int = 0) -> float:
        """Standard error of :attr:`value` itself: the spread of windows as large as the
        reference (a parametric bootstrap of the reference)."""
        draws = self.draw(self.positives, self.negatives, replicates=replicates, seed=seed)
        return float(draws.std())


def _multinomial(
    rng: np.random.Generator, count: int, share: Float64Array, replicates: int
) -> Float64Array:
    """``replicates`` rows of Multinomial(count, share) block counts."""
    blocks = share.size
    if count <= blocks:  # few draws: one categorical draw each, counted per block
        picks = categorical_picks(np.cumsum(share), rng.random((replicates, count)) * share.sum())
        offsets = np.arange(replicates)[:, None] * blocks
        drawn = np.bincount((picks + offsets).ravel(), minlength=replicates * blocks)
        return drawn.reshape(replicates, blocks).astype(np.float64)
    mean = count * share
    if count <= 4 * blocks:
        return rng.multinomial(count, share, size=replicates).astype(np.float64)
    if mean.min() < NORMAL_ABOVE:
        # Independent Poisson counts (the Poisson bootstrap's trick): a row's total varies by
        # about sqrt(count) around count, which moves AP's distribution by nothing measurable
        # at these sizes, and costs a third of numpy's multinomial.
        return poisson_or_normal(mean, replicates, rng)
    # The multinomial's normal approximation, with its covariance count (diag(s) - s s^T):
    # z sqrt(s) has covariance diag(s); removing its component along s makes the rows sum to 0.
    root = np.sqrt(share)
    z = rng.standard_normal((replicates, blocks)) * root
    z -= np.outer(z.sum(axis=1), share)
    normal: Float64Array = np.maximum(mean + np.sqrt(count) * z, 0.0)
    return normal


def categorical_picks(cumulative: Float64Array, u: Float64Array) -> IntArray:
    """``np.minimum(np.searchsorted(cumulative, u), cumulative.size - 1)``, the same indices,
    started from a guide table (Chen and Asau 1974, as :mod:`app.metrics._poisson_inversion`
    draws its counts): ``cumulative`` ascending, ``u`` >= 0 (a uniform past the top, which
    rounding allows, picks the last block, as the capped search does).

    A binary search of 64 blocks for each of a replicate batch's 50,000 uniforms took 1.7 ms,
    5% of a window's claim (the detector's and the nowcasts' null models); the blocks hold
    about equal shares, so the guide's cell lands within a step or two of the answer (0.4 ms).
    """
    last = cumulative.size - 1
    cells = _GUIDE_PER_BLOCK * cumulative.size
    top = float(cumulative[-1])
    # guide[g]: the first block whose cumulative share reaches the cell's lower edge g top / G.
    guide = np.searchsorted(cumulative, np.arange(cells) * (top / cells))
    flat = u.reshape(-1)
    # One cell below the uniform's own, so that the edge is below the uniform whatever the
    # products round to: every block before the guide's then ends below it, and the answer
    # (the first block whose cumulative share is not below it) is at or after the guide's.
    cell = (flat * (cells / top)).astype(np.intp) - 1
    np.clip(cell, 0, cells - 1, out=cell)
    at = np.minimum(guide[cell], last)
    pending = np.flatnonzero((flat > cumulative[at]) & (at < last))
    while pending.size:
        at[pending] += 1
        step = at[pending]
        pending = pending[(flat[pending] > cumulative[step]) & (step < last)]
    picks: IntArray = at.reshape(u.shape)
    return picks


def grouped_calibrated_ap(
    hits: Float64Array, false: Float64Array, negatives: float | Float64Array, pi0: float
) -> Float64Array:
    """Calibrated AP per row of tie-group counts, groups ordered from the highest score down
    (each group one tie group, as scikit-learn ties).

    ``hits`` and ``false`` are the positives and negatives of each group, shape ``(R, G)``;
    ``negatives`` the rows' negatives in all (a scalar or one per row: ``false`` may leave out
    the negatives below the last group). True positive rates are taken against each row's own
    positives (their total varies under Poisson draws), false positive rates against
    ``negatives``. A row without positives gives NaN.
    """
    totals = hits.sum(axis=1, keepdims=True)
    below = np.asarray(negatives, dtype=np.float64).reshape(-1, 1)
    # Each (R, G) step writes into a buffer already made (a detector's draw is 1,000 x 64):
    # the same operations on the same values as the plain expressions, the same floats.
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = np.cumsum(hits, axis=1) / totals
        flagged = np.cumsum(false, axis=1) / below  # the false positive rate...
        flagged *= 1.0 - pi0
        tpr *= pi0
        flagged += tpr  # ...and the share flagged at pi0: pi0 tpr + (1 - pi0) fpr
        precision = np.divide(tpr, flagged, out=np.zeros_like(tpr), where=flagged > 0)
        precision *= hits
        result: Float64Array = precision.sum(axis=1) / totals[:, 0]
    return result
