"""Which threshold to set now: the model's rates on a reference curve, at today's fraud rate.

When the fraud rate moves, the rows a threshold flags and the precision it gives move with it,
while the model's rates at every score (TPR, FPR) stay. So a frozen reference's curve sketch
and an estimate of the fraud rate now say, for every threshold, what a window will show:
``alerts = rows (pi TPR + (1 - pi) FPR)`` and ``precision = pi TPR / (pi TPR + (1 - pi) FPR)``.
Two thresholds are advised:

- **within capacity**: the lowest threshold (the most frauds caught) whose alerts in one window
  stay within the team's ``capacity`` with 97.5% probability: the upper end of a 95% prediction
  interval for one window's alerts, which carries the curve's sampling error (a Poisson
  bootstrap of the sketch's counts), the fraud rate's (drawn on the logit scale from its
  interval) and the window's own Poisson variation;
- **restoring precision**: the lowest threshold whose precision at the fraud rate now is at least
  a target (the reference's precision at the model's threshold): what the team was used to.

Thresholds are the sketch's entry scores, where the rows at or above are known exactly (between
two entries only legitimate rows lie, at scores the sketch does not keep), thinned to at most
``max_entries`` block ends of about equal frauds (the sketch's own threshold always one of
them): a reference pooled over weeks has tens of thousands of entries, and a threshold finer
than a thousandth of the frauds is finer than anything the advice can tell apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import chdtri  # chi2.ppf(p, df) is chdtri(df, 1 - p); scipy.stats is slow

from app.metrics._kernel import ReplicateCounts
from app.metrics._resampling import AmountSpread, merge_blocks, poisson_counts
from app.metrics.errors import InvalidInputError
from app.metrics.percentiles import expanded_tail
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array, Interval

LEVEL = 0.95
DISPERSION_CONFIDENCE = 0.8
"""How sure the dispersion of a reference's windows is not underestimated (see dispersion)."""
_Z = 1.959963984540054  # the two-sided 95% normal quantile


@dataclass(frozen=True)
class Expected:
    """What a window is expected to show at one threshold, at the fraud rate now."""

    threshold: float
    precision: float | None
    precision_ci: Interval | None
    recall: float
    recall_ci: Interval | None
    alerts: float
    """Mean alerts in a window of the given rows."""
    alerts_interval: Interval
    """95% prediction interval for one window's alerts."""
    value_recall: float | None = None
    """The share of the fraud amount caught (None: the reference's rows carry no amounts)."""
    value_recall_ci: Interval | None = None


@dataclass(frozen=True)
class Advice:
    """The two advised thresholds (None with a reason where none qualifies) and the current."""

    current: Expected
    within_capacity: Expected | None
    capacity_reason: str | None
    restoring_precision: Expected | None
    precision_reason: str | None
    target_precision: float | None


@dataclass(frozen=True)
class _Rates:
    """TPR and FPR at every candidate (columns), exact (row 0) and per replicate (rows 1...)."""

    scores: Float64Array
    tpr: Float64Array
    fpr: Float64Array
    value_recall: Float64Array | None = None
    """The share of the fraud amount at or above each candidate (None: no amounts)."""
    value_tail: float = (1 - LEVEL) / 2
    """Where its interval is read: expanded for the reference's few frauds (percentiles.py)."""


@dataclass(frozen=True)
class Situation:
    """The question: a window of ``rows`` rows at fraud rate ``pi`` (its 95% ``pi_interval``,
    None if known), the model's ``threshold`` now, the team's ``capacity`` (alerts a window;
    None: no capacity advice) and the ``target_precision`` to restore (None: none).

    ``fraud_dispersion`` is how much more one window's flagged frauds vary than Poisson counts
    would (variance over mean, at least 1): frauds come in bursts (one card, many transactions)
    and the fraud rate moves from day to day, so a budget kept "on average" overflows far more
    often than Poisson says. calmon measures it on the reference's windows (their true
    positives); the legitimate alerts are taken as Poisson.
    """

    pi: float
    pi_interval: Interval | None
    rows: float
    threshold: float
    capacity: int | None
    target_precision: float | None
    fraud_dispersion: float = 1.0


def advise(
    sketch: CurveSketch,
    situation: Situation,
    *,
    seed: int = 0,
    replicates: int = 1000,
    max_entries: int = 1024,
) -> Advice:
    """Advise thresholds on the reference curve ``sketch`` (see the module docstring).

    Raises
    ------
    InvalidInputError
        If the sketch lacks a class, is too small to bootstrap, or the fraud rate is not in
        (0, 1).
    """
    curve = ReferenceCurve.of(sketch, seed=seed, replicates=replicates, max_entries=max_entries)
    return curve.advise(situation)


class ReferenceCurve:
    """A reference's rates at every candidate threshold, exact and bootstrapped, from which
    advice at any fraud rate is read: the bootstrap depends on the reference alone, so a team
    re-reading the advice every window (bench/threshold_advice.py) draws it once.

    Each :meth:`advise` goes on drawing from the same generator (the fraud rate's and one
    window's draws): ``advise(sketch, situation, seed=s)`` is ``of(sketch, seed=s)`` then one
    ``advise(situation)``.
    """

    def __init__(self, rates: _Rates, rng: np.random.Generator) -> None:
        self._rates = rates
        self._rng = rng

    @classmethod
    def of(
        cls,
        sketch: CurveSketch,
        *,
        seed: int = 0,
        replicates: int = 1000,
        max_entries: int = 1024,
    ) -> ReferenceCurve:
        """Bootstrap ``sketch``'s rates (``replicates`` Poisson replicates, ``seed``).

        Raises
        ------
        InvalidInputError
            If the sketch lacks a class or too many replicates drew none of one.
        """
        if sketch.positives == 0 or sketch.negatives == 0:
            raise InvalidInputError("threshold advice needs a reference with both classes")
        rng = np.random.default_rng(seed)
        rates = _rates(sketch, replicates, rng, max_entries)
        drawn = rates.tpr.shape[0] - 1
        if drawn < replicates / 2:  # the intervals would rest on a minority of the draws
            raise InvalidInputError(
                f"the reference is too small to advise on: {replicates - drawn} of {replicates} "
                "bootstrap replicates drew no fraud or no legitimate row"
            )
        return cls(rates, rng)

    def advise(self, situation: Situation) -> Advice:
        """The advice in ``situation`` (see the module docstring).

        Raises
        ------
        InvalidInputError
            If the fraud rate is not in (0, 1).
        """
        pi = situation.pi
        if not 0.0 < pi < 1.0:
            raise InvalidInputError(f"the fraud rate must lie strictly between 0 and 1, got {pi}")
        rates, rng = self._rates, self._rng
        pis = _draw_pi(pi, situation.pi_interval, rates.tpr.shape[0] - 1, rng)
        outlook = _Outlook.of(rates, pis, situation, rng)
        upper = np.quantile(outlook.realised, 1.0 - (1.0 - LEVEL) / 2, axis=0)
        current = outlook.at(_entry_at_or_above(rates.scores, situation.threshold))
        capacity, target = situation.capacity, situation.target_precision
        within: Expected | None = None
        capacity_reason: str | None = "the model has no alert_capacity"
        if capacity is not None:
            # Down from the highest score until the alerts would overflow (their quantiles may
            # wiggle between neighbours; the first overflow ends the search).
            over = np.flatnonzero(upper > capacity)
            fits = int(over[0]) if over.size else upper.size
            within = outlook.at(fits - 1) if fits else None
            capacity_reason = (
                None
                if fits
                else f"even the highest score flags more than {capacity} alerts a window"
            )
        restoring: Expected | None = None
        precision_reason: str | None = "no reference precision to restore"
        if target is not None:
            good = np.flatnonzero(np.nan_to_num(outlook.precision[0]) >= target)
            restoring = outlook.at(int(good[-1])) if good.size else None
            precision_reason = (
                None
                if good.size
                else f"no threshold reaches precision {target:.4g} at fraud rate {pi:.4g}"
            )
        return Advice(
            current=current,
            within_capacity=within,
            capacity_reason=capacity_reason,
            restoring_precision=restoring,
            precision_reason=precision_reason,
            target_precision=target,
        )


def rates_at(sketch: CurveSketch, threshold: float) -> tuple[float, float]:
    """``(tpr, fpr)`` of ``sketch`` at its entry at or above ``threshold`` (exact when the
    threshold is an entry, as the sketch's own threshold is)."""
    j = _entry_at_or_above(sketch.scores, threshold)
    tp = float(np.sum(sketch.positives_at[: j + 1]))
    fp = float(np.sum(sketch.negatives_between[: j + 1]) + np.sum(sketch.negatives_tied[: j + 1]))
    return tp / sketch.positives, fp / sketch.negatives


def _entry_at_or_above(scores: Float64Array, threshold: float) -> int:
    """The lowest entry (of descending ``scores``) at or above ``threshold`` (else the highest)."""
    at_or_above = np.flatnonzero(scores >= threshold)
    return int(at_or_above[-1]) if at_or_above.size else 0


def _rates(
    sketch: CurveSketch, replicates: int, rng: np.random.Generator, max_entries: int
) -> _Rates:
    """Exact rates at the candidates, then one Poisson bootstrap replicate per row (rows 1...)."""
    merged = merge_blocks(sketch, max_entries)
    pos = merged.positives_at[0]
    neg = merged.negatives_tied[0] + merged.negatives_between[0]
    below = float(sketch.negatives_below)
    pos_r = np.vstack([pos, poisson_counts(pos, replicates, rng, 30.0)])
    neg_r = np.vstack([neg, poisson_counts(neg, replicates, rng, 30.0)])
    below_r = np.concatenate([[below], rng.poisson(below, replicates).astype(np.float64)])
    tp, fp = np.cumsum(pos_r, axis=1), np.cumsum(neg_r, axis=1)
    # A replicate that drew no fraud or no legitimate row has no rates: it is left out (row 0,
    # the sketch itself, has both classes).
    both = (tp[:, -1] > 0) & (fp[:, -1] + below_r > 0)
    value_recall = _value_recall(sketch, merged, pos_r, rng)
    tp, fp, below_r = tp[both], fp[both], below_r[both]
    return _Rates(
        scores=np.asarray(merged.scores, dtype=np.float64),
        tpr=tp / tp[:, -1:],
        fpr=fp / (fp[:, -1:] + below_r[:, None]),
        value_recall=value_recall[both] if value_recall is not None else None,
        value_tail=expanded_tail(LEVEL, sketch.positives),
    )


def _value_recall(
    sketch: CurveSketch,
    merged: ReplicateCounts,
    pos_r: Float64Array,
    rng: np.random.Generator,
) -> Float64Array | None:
    """The fraud amount's share at or above each candidate: exact (row 0), then each replicate
    with its amounts drawn given its drawn frauds (as the bootstrap draws them); None without
    amounts. Value recall involves frauds only, so it is the same at every fraud rate."""
    spread = AmountSpread.of(sketch, merged)
    if spread is None or merged.amounts is None:
        return None
    drawn = spread.positive.draw(pos_r[1:].astype(np.float32), rng)
    amounts = np.vstack([merged.amounts.positive_at[0], drawn.astype(np.float64)])
    caught = np.cumsum(amounts, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        share: Float64Array = caught / caught[:, -1:]
    return share


def _window_counts(
    means: Float64Array, dispersion: float, rng: np.random.Generator
) -> Float64Array:
    """One window's counts around ``means``: Poisson, or for ``dispersion`` > 1 the gamma-Poisson
    mixture (negative binomial) whose variance is ``dispersion`` times its mean."""
    if dispersion <= 1.0:
        return rng.poisson(means).astype(np.float64)
    scale = dispersion - 1.0
    rates = rng.gamma(np.maximum(means, 1e-12) / scale, scale)
    return rng.poisson(rates).astype(np.float64)


def dispersion(counts: Float64Array, confidence: float = DISPERSION_CONFIDENCE) -> float:
    """Variance over mean of per-window counts, at least 1 (never narrower than Poisson); 1
    with fewer than two windows or no counts.

    The upper end of a one-sided ``confidence`` interval of the variance (chi-square with
    windows - 1 degrees of freedom), not the point estimate: a reference has a couple of weeks
    of windows, whose sample variance can fall far below the true one, and an underestimate
    overflows the team's budget while an overestimate only costs a little recall (measured in
    bench/threshold_advice.py: with the point estimate, bursts of 1,000 frauds a window kept
    the budget in 94.9% of windows). ``confidence=0`` gives the point estimate.
    """
    if counts.size < 2 or counts.mean() <= 0:
        return 1.0
    ratio = float(counts.var(ddof=1) / counts.mean())
    if confidence > 0:
        df = counts.size - 1
        ratio *= df / float(chdtri(df, confidence))
    return max(1.0, ratio)


def _draw_pi(
    pi: float, interval: Interval | None, replicates: int, rng: np.random.Generator
) -> Float64Array:
    """``pi`` first, then draws on the logit scale whose 95% range is ``interval``."""
    if interval is None:
        return np.full(replicates + 1, pi)
    lo, hi = (min(max(p, 1e-12), 1 - 1e-12) for p in interval)
    scale = (_logit(hi) - _logit(lo)) / (2 * _Z)
    drawn = _logit(pi) + scale * rng.standard_normal(replicates)
    return np.concatenate([[pi], 1.0 / (1.0 + np.exp(-drawn))])


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class _Outlook:
    """Every candidate threshold at the fraud rate now: the share of rows flagged, one window's
    realised alerts and the precision; row 0 exact, rows 1... the replicates."""

    rates: _Rates
    rows: float
    flagged: Float64Array
    realised: Float64Array
    precision: Float64Array

    @classmethod
    def of(
        cls, rates: _Rates, pis: Float64Array, situation: Situation, rng: np.random.Generator
    ) -> _Outlook:
        frauds = pis[:, None] * rates.tpr
        legitimate = (1.0 - pis[:, None]) * rates.fpr
        flagged = frauds + legitimate
        rows = situation.rows
        realised = _window_counts(rows * frauds[1:], situation.fraud_dispersion, rng)
        realised += rng.poisson(rows * legitimate[1:])
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = pis[:, None] * rates.tpr / flagged
        return cls(rates, situation.rows, flagged, realised, precision)

    def at(self, j: int) -> Expected:
        """What a window shows at candidate ``j``."""
        point = float(self.precision[0, j])
        defined = math.isfinite(point)
        alerts_lo, alerts_hi = np.quantile(self.realised[:, j], _QUANTILES)
        return Expected(
            threshold=float(self.rates.scores[j]),
            precision=point if defined else None,
            precision_ci=_interval(self.precision[1:, j]) if defined else None,
            recall=float(self.rates.tpr[0, j]),
            recall_ci=_interval(self.rates.tpr[1:, j]),
            alerts=float(self.rows * self.flagged[0, j]),
            alerts_interval=(float(alerts_lo), float(alerts_hi)),
            **self._value_recall(j),
        )

    def _value_recall(self, j: int) -> dict[str, Any]:
        shares = self.rates.value_recall
        if shares is None or not math.isfinite(float(shares[0, j])):
            return {}
        interval = _interval(shares[1:, j], self.rates.value_tail)
        return {"value_recall": float(shares[0, j]), "value_recall_ci": interval}


_QUANTILES = ((1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2)


def _interval(column: Float64Array, tail: float = _QUANTILES[0]) -> Interval | None:
    """The percentile interval of the finite replicates at ``tail`` (None if too few are)."""
    finite = column[np.isfinite(column)]
    if finite.size < column.size * LEVEL:
        return None
    lo, hi = np.quantile(finite, (tail, 1.0 - tail))
    return float(lo), float(hi)
