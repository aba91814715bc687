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
  label-free warning (a G-test against the fitted mixture, and a one-parameter likelihood-ratio
  test against a tilt of the fraud scores, which the G-test all but cannot see).

Scores are summarised per window as counts in fixed bins (:func:`bin_edges`, chosen once per
model): the fit on ~65 bins measured as accurate as one on the exact scores with the true
densities (bench/nowcast.py), at a few hundred bytes a window, and bins merge by addition.
:mod:`app.metrics.nowcast` turns the fit into estimates with intervals.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import chdtrc, fdtrc

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
    index = np.searchsorted(edges, np.asarray(scores, dtype=np.float64), side="right")
    counts: Int64Array = np.bincount(index, minlength=edges.size + 1).astype(np.int64)
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
        # One search for the labelled rows (the window's cost: ~35 ms per million rows).
        index = np.searchsorted(edges, s, side="right")
        total = np.bincount(index, minlength=edges.size + 1)
        positives = np.bincount(index[y], minlength=edges.size + 1)
        return cls(
            positives.astype(np.int64),
            (total - positives).astype(np.int64),
            histogram(unlabelled, edges),
        )

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

    def slope(pi: Float64Array) -> tuple[Float64Array, Float64Array]:
        mix = pi[:, None] * d + p0
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(n > 0, d / mix, 0.0)
        return (n * ratio).sum(axis=1), -(n * ratio * ratio).sum(axis=1)

    rows = n.shape[0]
    total = n.sum(axis=1)
    at_zero, _ = slope(np.zeros(rows))
    at_one, _ = slope(np.ones(rows))
    boundary = (at_zero <= 0) | (at_one >= 0)  # the maximum is at 0 or 1: nothing to solve
    # A few EM steps (Saerens et al.'s update) bring pi to its scale from anywhere in (0, 1)...
    pi = np.full(rows, 0.5)
    for _ in range(3):
        mix = pi[:, None] * d + p0
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(n > 0, pi[:, None] * p1 / mix, 0.0)
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


def _log_likelihood(n: Float64Array, mix: Float64Array) -> Float64Array:
    with np.errstate(divide="ignore"):
        terms = np.where(n > 0, n * np.log(np.where(mix > 0, mix, 1.0)), 0.0)
    total: Float64Array = terms.sum(axis=-1)
    return total


@dataclass(frozen=True)
class Dispersion:
    """How much more the fraud rows' counts vary than independent rows would (quasi-likelihood).

    Frauds come in bursts: a compromised card or terminal makes several frauds a day with
    similar scores. The window's fraud counts are then overdispersed: each bin group's fraud
    count varies ``bins`` times its mean (not once, as for a multinomial sample), and the frauds'
    scores along the tilt (their mean, mostly) ``tilt`` times as much as independent frauds'.
    Legitimate rows stay independent. Each test divides its statistic by what that does to it at
    the window's fraud rate (:class:`Fit`), as quasi-likelihood does for overdispersed counts
    (McCullagh and Nelder 1989, ch. 9; outbreak detection on surveillance counts, Farrington et
    al. 1996, Noufaily et al. 2013). Estimated from the reference's own windows
    (:func:`reference_dispersion`); ``windows`` is how many (0: not estimated, both 1).
    """

    bins: float = 1.0
    tilt: float = 1.0
    windows: int = 0

    def __post_init__(self) -> None:
        if not (self.bins >= 1.0 and self.tilt >= 1.0 and self.windows >= 0):
            raise InvalidInputError(f"a dispersion is at least 1: {self}")

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"bins": self.bins, "tilt": self.tilt, "windows": self.windows}


NO_DISPERSION = Dispersion()
"""Independent rows: the tests as they were before bursts were measured."""


def reference_dispersion(windows: Sequence[ScoreHistogram], edges: Float64Array) -> Dispersion:
    """The dispersion of a reference's frauds, from its own windows' labelled rows.

    Each window is tested as a later window would be, against the reference pooled without it
    (so that it is not fitted to itself). With the variance ``legitimate mean + dispersion x
    fraud mean``, a test's statistic over its inflation averages ``dof + (dispersion - 1) x``
    the frauds' share of its dof (:meth:`_Misfit.g_fraud_dof`, :meth:`_Misfit.tilt_fraud_share`);
    summing over the windows and solving for the dispersion is Pearson's moment estimate of
    quasi-likelihood, one for the G-test's bin groups and one for the tilt. Never below 1: a
    reference quieter than independent rows is chance, not a licence to warn sooner.

    The G-test's dispersion rests on every fraud-rich bin group of every window; the tilt's on
    one number a window, so its p-value is then read from F(1, windows) (:func:`goodness_of_fit`)
    and it is estimated only from ``MIN_TILT_WINDOWS`` windows on: from 5, F(1, 5)'s 0.1% point
    is 47 against chi-square's 10.8, and the tilt test would see no shift at all. Below that,
    and for a reference of fewer than three windows, independent rows are assumed.
    """
    positives = np.sum([w.positives for w in windows], axis=0)
    negatives = np.sum([w.negatives for w in windows], axis=0)
    misfits = []
    for window in windows:
        rest = ClassHistogram(edges, positives - window.positives, negatives - window.negatives)
        rows = window.positives + window.negatives
        if rest.positives.sum() == 0 or rest.negatives.sum() == 0 or rows.sum() == 0:
            continue  # (a window holding all the reference's frauds: nothing to test it on)
        f1, f0 = rest.densities()
        pi = float(fit_prior(rows[None, :].astype(np.float64), f1, f0)[0])
        reference_rows = int(rest.positives.sum() + rest.negatives.sum())
        misfits.append(_Misfit.of(rows, rest, pi, reference_rows=reference_rows))
    if len(misfits) < _MIN_DISPERSION_WINDOWS:
        return NO_DISPERSION
    # Linear in the dispersion: E[statistic] = dof + (dispersion - 1) x the frauds' share of
    # dof. A window of (estimated) no frauds adds its excess to the sum and nothing to the
    # frauds' share, as it should; solving "deflated statistics sum to dof" instead let such a
    # window (a large tilt at pi = 0, which no dispersion deflates) drive the estimate to 80.
    # The inflations depend a little on the dispersion: three rounds settle them.
    bins = tilt = 1.0
    for _ in range(3):
        at = [m.deflated(Dispersion(bins, tilt)) for m in misfits]
        g_excess = sum(m.g / d.inflation - m.dof for m, d in zip(misfits, at, strict=True))
        tilt_excess = sum(m.tilt / d.tilt_inflation - 1.0 for m, d in zip(misfits, at, strict=True))
        bins = 1.0 + _ratio(g_excess, sum(m.g_fraud_dof() for m in misfits))
        tilt = 1.0 + _ratio(tilt_excess, sum(m.tilt_fraud_share() for m in misfits))
        if len(misfits) < MIN_TILT_WINDOWS:
            tilt = 1.0
    return Dispersion(bins, tilt, windows=len(misfits))


_MIN_DISPERSION_WINDOWS = 3
MIN_TILT_WINDOWS = 10
"""Reference windows the tilt's dispersion is estimated from at least (see
:func:`reference_dispersion`); the model settings' default reference has 14."""


def _ratio(excess: float, fraud_dof: float) -> float:
    """The dispersion's excess over 1 (never below 0, and 0 with no fraud dof to carry it)."""
    return max(excess, 0.0) / fraud_dof if fraud_dof > 1e-9 else 0.0


@dataclass(frozen=True)
class Fit:
    """How well the fitted mixture explains a window's scores (see :func:`goodness_of_fit`).

    ``g``/``dof``: the G statistic against the fitted mixture over bins pooled to an expected
    count of 5, its degrees of freedom; ``tilt``: the likelihood-ratio statistic for a tilt of
    the fraud scores (one degree of freedom). Each is divided by its inflation (``inflation``,
    ``tilt_inflation``: the reference's densities are estimates too, and their error adds to
    the window's own) and by its dispersion (``dispersion``, ``tilt_dispersion``: the frauds'
    bursts, :class:`Dispersion`, at this window's fraud rate) before its p-value is read.
    """

    g: float
    dof: int
    tilt: float
    inflation: float
    tilt_inflation: float
    p_value: float
    tilt_p_value: float
    dispersion: float = 1.0
    tilt_dispersion: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "g": self.g,
            "dof": self.dof,
            "tilt": self.tilt,
            "inflation": self.inflation,
            "tilt_inflation": self.tilt_inflation,
            "dispersion": self.dispersion,
            "tilt_dispersion": self.tilt_dispersion,
            "p_value": self.p_value,
            "tilt_p_value": self.tilt_p_value,
        }


_TILTS = np.linspace(-3.0, 3.0, 61)


def goodness_of_fit(
    counts: Int64Array,
    reference: ClassHistogram,
    pi: float,
    *,
    reference_rows: int,
    dispersion: Dispersion = NO_DISPERSION,
) -> Fit:
    """Test a window's bin counts against the mixture fitted at ``pi``.

    The G-test sees any change of shape (a shift of the legitimate scores, which are most of
    the rows, shows at once). A shift of the fraud scores alone mostly looks like a different
    fraud rate, so the second test profiles the likelihood over an exponential tilt of the fraud
    density, ``f1 exp(t z) / norm`` (``z``: :meth:`ClassHistogram.fraud_positions`, ``t`` from -3
    to 3 fraud standard deviations), and compares the best tilt with none.

    Both statistics are deflated by the reference's share of the error: a bin's expected share
    ``pi f1 + (1 - pi) f0`` is estimated with variance ``pi^2 f1 / P + (1 - pi)^2 f0 / N``
    (``P``, ``N``: the reference's labelled frauds and legitimate rows, ``reference_rows`` split
    as ``reference`` is), against the window's own ``share / rows``. At the reference's own fraud
    rate that is ``1 + rows / reference_rows`` in every bin; at a fraud rate many times the
    reference's the fraud-dominated bins carry much more (few reference frauds), which a single
    ``1 + rows / reference_rows`` missed (the tests then fired on pure prior drift).

    And by the frauds' bursts (``dispersion``): a bin's variance is its legitimate rows' mean
    plus ``dispersion.bins`` times its frauds' (the reference's fraud share too), so each G
    group's deviance is divided by ``1 + (bins - 1) x its fraud share`` (only the fraud-rich
    groups move, and more so at a high fraud rate), and the tilt by ``1 + (tilt - 1) x the
    frauds' share of its variance``. With an estimated tilt dispersion above 1 the tilt's
    p-value is read from F(1, windows), not chi-square(1): its estimate rests on ``windows``
    numbers only, and taking it as exact would let its noise through as false warnings.
    """
    return _Misfit.of(counts, reference, pi, reference_rows=reference_rows).fit(dispersion)


@dataclass(frozen=True)
class _Misfit:
    """What the tests need that the dispersion does not change (the tilt's profile is most of
    the cost), so that :func:`reference_dispersion` can try many dispersions cheaply."""

    total: float
    g: float
    deviances: Float64Array
    """Per G group, ``2 (O log(O / E) - (O - E))``: non-negative, summing to ``g``."""
    groups: Int64Array
    share: Float64Array
    fraud_share: Float64Array
    """Per bin, ``pi f1``: the frauds' part of ``share``."""
    reference_fraud: Float64Array
    reference_legit: Float64Array
    """Per bin, the reference's variance of ``share`` from its frauds and from its legitimate
    rows (per window row: relative to ``share``, times rows)."""
    tilt: float
    along: Float64Array
    pi: float
    difference: Float64Array
    """Per bin, ``f1 - f0``: the direction a change of pi moves the shares in."""

    @classmethod
    def of(
        cls, counts: Int64Array, reference: ClassHistogram, pi: float, *, reference_rows: int
    ) -> _Misfit:
        n = counts.astype(np.float64)
        total = float(n.sum())
        f1, f0 = reference.densities()
        share = pi * f1 + (1.0 - pi) * f0
        expected = total * share
        positives = float(reference.positives.sum())
        labelled = positives + float(reference.negatives.sum())
        frauds = max(reference_rows, 1) * positives / labelled
        legit = max(reference_rows, 1) - frauds
        groups = _pooled(expected)
        observed_pooled = np.bincount(groups, weights=n)
        expected_pooled = np.bincount(groups, weights=expected)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(observed_pooled > 0, observed_pooled / expected_pooled, 1.0)
        # Each group's deviance; the (O - E) terms sum to 0 (the expected total is the rows').
        deviances = 2.0 * (observed_pooled * np.log(ratio) - (observed_pooled - expected_pooled))
        # The tilt: the best mixture with the fraud density tilted, against the untilted one.
        z = reference.fraud_positions()
        tilted = f1[None, :] * np.exp(_TILTS[:, None] * z[None, :])
        tilted /= tilted.sum(axis=1, keepdims=True)
        rows = np.broadcast_to(n, tilted.shape)
        best_pi = fit_prior(rows, tilted, np.broadcast_to(f0, tilted.shape))
        profile = _log_likelihood(rows, best_pi[:, None] * tilted + (1 - best_pi[:, None]) * f0)
        untilted = _log_likelihood(n, share)
        return cls(
            total=total,
            g=float(2.0 * (observed_pooled * np.log(ratio)).sum()),
            deviances=np.maximum(deviances, 0.0),
            groups=groups,
            share=share,
            fraud_share=pi * f1,
            reference_fraud=pi**2 * f1 / frauds,
            reference_legit=(1.0 - pi) ** 2 * f0 / legit,
            tilt=float(max(2.0 * (profile.max() - untilted), 0.0)),
            along=_tilt_score(f1, f0, z, pi),
            pi=pi,
            difference=f1 - f0,
        )

    @property
    def dof(self) -> int:
        return max(int(self.groups.max()) + 1 - 2, 1)

    def g_fraud_dof(self) -> float:
        """How much of the G-test's dof the frauds carry: E[G] = dof + (dispersion - 1) x this.

        The groups' Pearson residuals have variance ``1 + (dispersion - 1) s_g`` (``s_g``: the
        group's fraud share); the fit takes out the total (whose fraud share is pi) and the
        direction pi moves (``(f1 - f0) / sqrt(share)``, normalised: ``q``), so the frauds'
        part is ``sum s_g - pi - sum q_g^2 s_g``."""
        own = np.bincount(self.groups, weights=self.share)
        fraud = np.bincount(self.groups, weights=self.fraud_share) / own
        moved = np.bincount(self.groups, weights=self.difference) ** 2 / own
        along = float((moved * fraud).sum()) / float(moved.sum()) if moved.sum() > 0 else 0.0
        return max(float(fraud.sum()) - self.pi - along, 0.0)

    def tilt_fraud_share(self) -> float:
        """The frauds' share of the window's variance along the tilt's score."""
        a2 = self.along * self.along
        own = float((a2 * self.share).sum())
        return float((a2 * self.fraud_share).sum()) / own if own > 0 else 0.0

    def deflated(self, dispersion: Dispersion) -> _Deflated:
        """The statistics' divisors under ``dispersion`` (see :func:`goodness_of_fit`)."""
        # Per group, the window's variance relative to a multinomial's (>= 1); no zero shares:
        # every group expects >= 5 rows, or is the only one (its share then 1).
        own = np.bincount(self.groups, weights=self.share)
        frauds = np.bincount(self.groups, weights=self.fraud_share)
        weight = 1.0 + (dispersion.bins - 1.0) * frauds / own
        # (At a dispersion of 1 exactly 1: the tests are then the ones before it.)
        g = float((self.deviances / weight).sum()) if dispersion.bins > 1.0 else self.g
        reference = self.reference_fraud * dispersion.bins + self.reference_legit
        excess = np.bincount(self.groups, weights=reference) / (own * weight)
        # The tilt's score, the window's variance along it and the frauds' part of that.
        a2 = self.along * self.along
        own_along = float((a2 * self.share).sum())
        if own_along <= 0:
            return _Deflated(
                self.g / g if 0 < g < self.g else 1.0,
                1.0 + self.total * float(excess.mean()),
                1.0,
                1.0,
            )
        tilt_dispersion = (
            1.0 + (dispersion.tilt - 1.0) * float((a2 * self.fraud_share).sum()) / own_along
        )
        reference_along = self.reference_fraud * dispersion.tilt + self.reference_legit
        return _Deflated(
            g_dispersion=self.g / g if 0 < g < self.g else 1.0,
            inflation=1.0 + self.total * float(excess.mean()),
            tilt_dispersion=tilt_dispersion,
            tilt_inflation=1.0
            + self.total * float((a2 * reference_along).sum()) / (own_along * tilt_dispersion),
        )

    def fit(self, dispersion: Dispersion) -> Fit:
        d = self.deflated(dispersion)
        tilt = self.tilt / (d.tilt_dispersion * d.tilt_inflation)
        return Fit(
            g=self.g,
            dof=self.dof,
            tilt=self.tilt,
            inflation=d.inflation,
            tilt_inflation=d.tilt_inflation,
            p_value=chi2_sf(self.g / (d.g_dispersion * d.inflation), self.dof),
            tilt_p_value=(
                f_sf(tilt, 1, dispersion.windows)
                if dispersion.windows > 0 and dispersion.tilt > 1.0
                else chi2_sf(tilt, 1)
            ),
            dispersion=d.g_dispersion,
            tilt_dispersion=d.tilt_dispersion,
        )


@dataclass(frozen=True)
class _Deflated:
    g_dispersion: float
    """``g`` over the sum of its groups' deviances each divided by its dispersion: the
    deviance-weighted mean dispersion of the groups (1 if ``g`` is 0)."""
    inflation: float
    tilt_dispersion: float
    tilt_inflation: float


def _tilt_score(f1: Float64Array, f0: Float64Array, z: Float64Array, pi: float) -> Float64Array:
    """Per bin, the tilt's score (the log-share's slope in the tilt) with the part that a change
    of pi would explain projected out (pi is profiled), in the window's Fisher metric."""
    share = pi * f1 + (1.0 - pi) * f0
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(share > 0, pi * f1 * z / share, 0.0)
        s = np.where(share > 0, (f1 - f0) / share, 0.0)
    norm = float((share * s * s).sum())
    along: Float64Array = u - (float((share * u * s).sum()) / norm) * s if norm > 0 else u
    return along


def _pooled(expected: Float64Array) -> Int64Array:
    """Each bin's group: adjacent bins pooled until each group expects at least 5 rows (the
    G-test's approximation); a remainder short of 5 joins the last group."""
    groups = np.zeros(expected.size, dtype=np.int64)
    group, acc = 0, 0.0
    for b, e in enumerate(expected.tolist()):
        groups[b] = group
        acc += e
        if acc >= 5.0:
            group, acc = group + 1, 0.0
    if group > 0 and acc < 5.0:
        groups[groups == group] = group - 1
    return groups


def f_sf(x: float, dof: int, denominator: int) -> float:
    """P(X >= x) for X ~ F(dof, denominator) scaled by ``dof`` (so ``x`` is on the chi-square
    scale: a statistic over a dispersion estimated from ``denominator`` degrees of freedom);
    1 for any ``x <= 0``."""
    return 1.0 if x <= 0 else float(fdtrc(dof, denominator, x / dof))


def chi2_sf(x: float, dof: int) -> float:
    """P(X >= x) for X ~ chi-square(dof) (scipy's ``chdtrc``); 1 for any ``x <= 0``, where a
    statistic rounded a hair below 0 would otherwise give NaN."""
    return 1.0 if x <= 0 else float(chdtrc(dof, x))
