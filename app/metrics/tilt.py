"""The early drop detector's evidence: where a window's labelled frauds score.

:meth:`TiltTest.evidence` is the log-likelihood ratio of the labelled frauds' bins, *given how
many arrived and where labels arrive fast* (the completeness of :mod:`app.metrics.reporting`),
under a drop (the reference's fraud scores exponentially tilted down, on the binormal axis,
until the calibrated AP has fallen by the design drop: :func:`tilt_for_drop`) against no drop.
Conditioning on the count makes it blind to the fraud rate; conditioning on the completeness
makes it blind to the mere fact that flagged frauds are labelled first. Its exponential has
expectation one under "no drop" whatever the window's size or age, which is what lets a CUSUM
of it keep its false-alarm bound. :func:`dispersion` measures how much burstier than
independent frauds a segment's windows are (frauds of one card or terminal score alike).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

# scipy.special, not scipy.stats: the same chi-square functions without the 0.55 s scipy.stats
# adds to every start of the API (chdtri(df, q) is chi2.ppf(1 - q, df)).
from scipy.special import chdtr, chdtrc, chdtri, ndtri

from app.metrics.errors import InvalidInputError
from app.metrics.null_model import grouped_calibrated_ap
from app.metrics.types import Float64Array


def binormal_axis(legit: npt.ArrayLike) -> Float64Array:
    """Each bin's position on the binormal axis: the normal score of the legitimate rows' CDF
    at the bin's middle. Along it a classifier's fraud scores are about normal for most models
    (the binormal ROC model), and for Siblini et al.'s Gaussian setup it is the score itself, so
    a shift of the frauds' mean there is an exponential tilt along it."""
    counts = np.asarray(legit, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        raise InvalidInputError("the binormal axis needs legitimate rows")
    below = np.concatenate([[0.0], np.cumsum(counts)[:-1]])
    middle = (below + counts / 2.0) / total
    edge = 0.5 / total
    axis: Float64Array = ndtri(np.clip(middle, edge, 1.0 - edge))
    return axis


def tilted(shares: Float64Array, axis: Float64Array, theta: float | Float64Array) -> Float64Array:
    """The fraud shares exponentially tilted by ``theta`` along ``axis`` (rows: thetas)."""
    t = np.atleast_1d(np.asarray(theta, dtype=np.float64))[:, None]
    weights = shares[None, :] * np.exp(t * (axis[None, :] - axis.max()))
    out: Float64Array = weights / weights.sum(axis=1, keepdims=True)
    return out


def tilted_rows(shares: Float64Array, axis: Float64Array, theta: float) -> Float64Array:
    """Each row of fraud shares (rows: curves) tilted by ``theta`` along ``axis``."""
    weights = shares * np.exp(theta * (axis[None, :] - axis.max()))
    out: Float64Array = weights / weights.sum(axis=1, keepdims=True)
    return out


def _log_mean_exp(values: Float64Array) -> float:
    """log(mean(exp(values))), without overflow; -inf if every value is."""
    top = float(np.max(values))
    if not np.isfinite(top):
        return top
    return top + float(np.log(np.mean(np.exp(values - top))))


def binned_average_precision(
    fraud_shares: Float64Array, legit_shares: Float64Array, pi0: float
) -> Float64Array:
    """Calibrated AP of the bins' shares (rows: curves; highest bin first inside)."""
    f1 = np.atleast_2d(fraud_shares)
    f0 = np.broadcast_to(np.atleast_2d(legit_shares), f1.shape)
    return grouped_calibrated_ap(f1[:, ::-1], f0[:, ::-1], f0.sum(axis=1), pi0)


def tilt_for_drop(
    fraud_shares: Float64Array,
    legit_shares: Float64Array,
    axis: Float64Array,
    *,
    pi0: float,
    drop: float,
) -> float:
    """The (negative) tilt of the fraud scores that lowers the binned calibrated AP by the
    relative ``drop``."""
    if not 0.0 < drop < 1.0:
        raise InvalidInputError(f"drop must be in (0, 1), got {drop}")
    target = (1.0 - drop) * float(binned_average_precision(fraud_shares, legit_shares, pi0)[0])
    low, high = -8.0, 0.0
    if (
        float(binned_average_precision(tilted(fraud_shares, axis, low)[0], legit_shares, pi0)[0])
        > target
    ):
        return low  # the bins cannot show so large a drop: the strongest tilt they can
    for _ in range(60):
        middle = (low + high) / 2.0
        value = float(
            binned_average_precision(tilted(fraud_shares, axis, middle)[0], legit_shares, pi0)[0]
        )
        low, high = (middle, high) if value < target else (low, middle)
    return (low + high) / 2.0


@dataclass(frozen=True)
class TiltEvidence:
    """One window's early evidence of a drop: the log-likelihood ratio of its labelled frauds'
    bins under the drop's tilt against no drop, and the standardised shift of their positions
    (positive: they score lower than the reference, weighted by where labels arrive fast)."""

    frauds: int
    log_likelihood_ratio: float
    z: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"frauds": self.frauds, "llr": self.log_likelihood_ratio, "z": self.z}


@dataclass(frozen=True)
class TiltTest:
    """The early drop test of one segment (see the module docstring): the reference's fraud
    shares per bin, the binormal axis, the tilt "no drop" is taken at (the reference's own
    uncertainty given to the window, see app/monitoring/early) and the design drop's tilt."""

    shares: Float64Array
    axis: Float64Array
    null_tilt: float
    drop_tilt: float

    def evidence(self, observed: npt.ArrayLike, completeness: Float64Array) -> TiltEvidence:
        """The evidence of labelled frauds per bin ``observed``, given F per bin at their
        window's look: one row per plausible value of F (rows: the estimate's bootstrap
        replicates, or one row).

        F is not known, only estimated, and at early looks from a handful of arrivals: the
        likelihood of each hypothesis is averaged over the rows (F integrated out, the bootstrap
        standing for its posterior), so a look whose F is uncertain weighs less, and E[exp(LLR)]
        stays 1 under "no drop" when the rows are as spread as F's own uncertainty.
        """
        o = np.asarray(observed, dtype=np.float64)
        frauds = int(o.sum())
        f = np.clip(np.nan_to_num(np.atleast_2d(completeness), nan=0.0), 0.0, 1.0)
        reach = self.shares[None, :] * f
        usable = reach.sum(axis=1) > 0
        if frauds == 0 or not usable.any():
            return TiltEvidence(frauds, 0.0, 0.0)
        reach = reach[usable] / reach[usable].sum(axis=1, keepdims=True)
        arrived = o > 0
        logs = []
        for theta in (self.null_tilt, self.drop_tilt):
            q = tilted_rows(reach, self.axis, theta)
            with np.errstate(divide="ignore"):
                per_row = (o[arrived] * np.log(q[:, arrived])).sum(axis=1)
            logs.append(_log_mean_exp(per_row))
        if not all(np.isfinite(logs)):  # a fraud where no row of either hypothesis puts any
            return TiltEvidence(frauds, 0.0, 0.0)
        q0 = tilted_rows(reach, self.axis, self.null_tilt).mean(axis=0)
        mean = float((q0 * self.axis).sum())
        variance = float((q0 * (self.axis - mean) ** 2).sum())
        spread = np.sqrt(frauds * variance) if variance > 0 else 0.0
        z = float(-(o * (self.axis - mean)).sum() / spread) if spread > 0 else 0.0
        return TiltEvidence(frauds, float(logs[1] - logs[0]), z)


def dispersion(observed: npt.ArrayLike, shares: Float64Array, axis: Float64Array) -> float:
    """How much more the mean position of a window's frauds varies from window to window than
    independent frauds would make it vary, from the windows' standardised mean positions (rows
    of ``observed``: windows' fraud counts per bin, complete, in time order) against the
    ``shares`` they were pooled into. About 1 for independent frauds; frauds that come in
    bursts of similar scores (one compromised card, many transactions) make it larger. Under 1
    is reported as measured (the caller floors it).

    It is read off successive windows' differences, as a control chart's moving range reads
    its sigma, and each squared difference is clipped at the 95th percentile it would have
    (a Huber-type M-estimate of that scale): both because a model that got worse and has not
    paged yet must not read as bursty frauds and slow its own page. About the reference's
    level, ten 10-fraud windows after a -40% step read 1.33 where the frauds were independent;
    one window of 1,000 frauds after it, the 24th of a young model's, made the unclipped
    moving range read 3.7, and reads 1.35 clipped (tests/metrics/test_reporting.py)."""
    counts = np.atleast_2d(np.asarray(observed, dtype=np.float64))
    per_window = counts.sum(axis=1)
    used = per_window > 0
    if used.sum() < 2:
        return 1.0
    mean = float((shares * axis).sum())
    variance = float((shares * (axis - mean) ** 2).sum())
    if variance <= 0:
        return 1.0
    z = (counts[used] * (axis - mean)).sum(axis=1) / np.sqrt(per_window[used] * variance)
    halves = np.diff(z) ** 2 / 2.0  # each a dispersion times a chi-square of 1 degree
    scale = float(halves.mean())
    for _ in range(_CLIP_ITERATIONS):  # the fixed point, approached from above
        clipped = float(np.minimum(halves, _CLIP * scale).mean()) / _CLIPPED_MEAN
        if clipped >= scale * (1.0 - 1e-9):
            return clipped
        scale = clipped
    return scale


_CLIP = float(chdtri(1, 0.05))  # the chi-square(1) 95th percentile
_CLIPPED_MEAN = float(chdtr(3, _CLIP) + _CLIP * chdtrc(1, _CLIP))
"""E[min(X, c)] for X a chi-square of 1 degree: E[X; X < c] = P(chi2_3 < c), plus c P(X > c)."""
_CLIP_ITERATIONS = 100
