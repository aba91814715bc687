"""How well a window's scores fit the reference's mixture: the label-free score-shift tests.

A window whose scores the fitted mixture (:mod:`app.metrics.mixture`) does **not** explain had
P(score | class) move: a G-test against the fitted mixture sees any change of shape (a shift of
the legitimate scores, which are most of the rows, shows at once), and a one-parameter
likelihood-ratio test against an exponential tilt of the fraud scores sees what the G-test all
but cannot (a shift of the fraud scores alone mostly looks like a different fraud rate). Both
are deflated by the reference's own noise and by the dispersion of the reference's windows
(frauds in bursts: :class:`Dispersion`, a quasi-likelihood).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import chdtrc, fdtrc

from app.metrics.burst_dispersion import (
    NO_DISPERSION,
    Dispersion,
    bins_spread,
    moment_dispersion,
)
from app.metrics.mixture import ClassHistogram, ScoreHistogram, fit_prior, log_likelihood
from app.metrics.types import Float64Array, Int64Array

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
        rest_positives = positives - window.positives
        rest_negatives = negatives - window.negatives
        rows = window.positives + window.negatives
        if rest_positives.sum() == 0 or rest_negatives.sum() == 0 or rows.sum() == 0:
            continue  # (a window holding all the reference's frauds: nothing to test it on)
        rest = ClassHistogram(edges, rest_positives, rest_negatives)
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
        bins = float(moment_dispersion(g_excess, sum(m.g_fraud_dof() for m in misfits)))
        tilt = float(moment_dispersion(tilt_excess, sum(m.tilt_fraud_share() for m in misfits)))
        if len(misfits) < MIN_TILT_WINDOWS:
            tilt = 1.0
    at = [m.deflated(Dispersion(bins, tilt)) for m in misfits]
    spread = bins_spread(
        np.array([m.g / d.inflation - m.dof for m, d in zip(misfits, at, strict=True)]),
        np.array([m.g_fraud_dof() for m in misfits]),
    )
    return Dispersion(bins, tilt, windows=len(misfits), bins_spread=spread)


_MIN_DISPERSION_WINDOWS = 3
MIN_TILT_WINDOWS = 10
"""Reference windows the tilt's dispersion is estimated from at least (see
:func:`reference_dispersion`); the model settings' default reference has 14."""


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
    numbers only, and taking it as exact would let its noise through as false warnings. For the
    same reason the G-test's p-value is averaged over the bins dispersions the reference's
    windows allow (``dispersion.bins_spread``, their bootstrap). The tilt keeps F: with the
    same bootstrap for it, bursts of 8 frauds scoring alike (100 frauds a window) warned on
    1.24% of healthy windows, with F 0.94% (bench/nowcast_bursts.py's stress row).
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
        profile = log_likelihood(rows, best_pi[:, None] * tilted + (1 - best_pi[:, None]) * f0)
        untilted = log_likelihood(n, share)
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

    def _g_divisors(self, bins: Float64Array) -> tuple[Float64Array, Float64Array]:
        """The G-test's dispersion and inflation at each bins dispersion in ``bins``."""
        # Per group, the window's variance relative to a multinomial's (>= 1); no zero shares:
        # every group expects >= 5 rows, or is the only one (its share then 1).
        own = np.bincount(self.groups, weights=self.share)
        frauds = np.bincount(self.groups, weights=self.fraud_share)
        weight = 1.0 + (bins[:, None] - 1.0) * frauds / own
        # (At a dispersion of 1 exactly 1: the tests are then the ones before it.)
        g = np.where(bins > 1.0, (self.deviances / weight).sum(axis=1), self.g)
        g_dispersion = np.where((g > 0) & (g < self.g), self.g / np.maximum(g, 1e-300), 1.0)
        reference_fraud = np.bincount(self.groups, weights=self.reference_fraud)
        reference_legit = np.bincount(self.groups, weights=self.reference_legit)
        excess = (reference_fraud * bins[:, None] + reference_legit) / (own * weight)
        return g_dispersion, 1.0 + self.total * excess.mean(axis=1)

    def deflated(self, dispersion: Dispersion) -> _Deflated:
        """The statistics' divisors under ``dispersion`` (see :func:`goodness_of_fit`)."""
        g_dispersions, inflations = self._g_divisors(np.array([dispersion.bins]))
        g_dispersion, inflation = float(g_dispersions[0]), float(inflations[0])
        # The tilt's score, the window's variance along it and the frauds' part of that.
        a2 = self.along * self.along
        own_along = float((a2 * self.share).sum())
        if own_along <= 0:
            return _Deflated(g_dispersion, inflation, 1.0, 1.0)
        tilt_dispersion = (
            1.0 + (dispersion.tilt - 1.0) * float((a2 * self.fraud_share).sum()) / own_along
        )
        reference_along = self.reference_fraud * dispersion.tilt + self.reference_legit
        return _Deflated(
            g_dispersion=g_dispersion,
            inflation=inflation,
            tilt_dispersion=tilt_dispersion,
            tilt_inflation=1.0
            + self.total * float((a2 * reference_along).sum()) / (own_along * tilt_dispersion),
        )

    def _g_p_value(self, dispersion: Dispersion) -> float:
        """The G-test's p-value, averaged over the bins dispersions the reference allows."""
        g_dispersions, inflations = self._g_divisors(np.asarray(dispersion.bins_at()))
        statistic = self.g / (g_dispersions * inflations)
        p_values = np.where(statistic > 0, chdtrc(self.dof, np.maximum(statistic, 0.0)), 1.0)
        return float(p_values.mean())

    def fit(self, dispersion: Dispersion) -> Fit:
        d = self.deflated(dispersion)
        tilt = self.tilt / (d.tilt_dispersion * d.tilt_inflation)
        return Fit(
            g=self.g,
            dof=self.dof,
            tilt=self.tilt,
            inflation=d.inflation,
            tilt_inflation=d.tilt_inflation,
            p_value=self._g_p_value(dispersion),
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
