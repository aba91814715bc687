"""The drop detector: evidence that accumulates across windows, against a frozen reference.

Each mature window with positives contributes one standardised deficit ``z`` of its calibrated
average precision against the reference (:func:`weigh`):

* the window's calibrated AP is placed in the distribution it would have *if nothing had changed*
  (:class:`app.metrics.null_model.NullModel`: windows of the same positives and negatives drawn
  from the reference), and its mid-p percentile is turned into a normal score. So ``z`` is
  standard normal under "no change" whatever the window's size, skew or finite-sample bias,
  which a standard error read off a percentile interval is not;
* the reference is an estimate too: a reference AP that came out high by chance would make every
  later window look worse, and that error does not average out over windows. The observed AP is
  therefore given the benefit of ``REFERENCE_SIGMAS`` standard errors of the reference's own AP
  before it is placed (a small reference costs detection speed, not false pages).

The windows' ``z`` feed a one-sided CUSUM of log-likelihood ratios (Page 1954), weighted for the
window's information: for the model setting ``detection_drop`` (a relative drop of calibrated AP,
``delta``), a window whose null spread is ``s`` weighs ``rho = delta * AP_ref / s`` standard
deviations, and the statistic moves by ``rho * z - rho**2 / 2``. That is the log-likelihood ratio
of "the window dropped by delta" against "it did not", so a window with many positives counts for
more than a window with few, and evidence from quiet days adds up until it is enough. Drops the
size of ``delta`` are caught soonest; lasting drops under about half of it drift the statistic
down and are not paged.

The statistic pages when it exceeds ``THRESHOLD`` (raised by ln S for a model's S named segments,
so that the model's segments together keep the rate one series has: a Bonferroni bound, since
under "no change" the exponential of a log-likelihood-ratio CUSUM is a martingale and its false-
alarm rate per window is at most exp(-threshold)). Once paging, it keeps paging until the
statistic falls back to half the threshold (hysteresis: one unlucky window inside a lasting drop
does not resolve the page), and it is capped half a threshold above it, so a page clears after
about as much evidence of health as it took evidence of a drop to raise it. A symmetric CUSUM on
the gain side reports improvements.

The constants were chosen by simulation (bench/detection.py; README "Verdicts and alerts").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from statistics import NormalDist

import numpy as np

from app.metrics.types import Float64Array

THRESHOLD = 10.0
"""Log-likelihood-ratio threshold of one series (the bound on its false-page rate per window is
exp(-10) = 4.5e-5; the measured rate is lower, see the README)."""
HOLD = 0.5
"""While paging, the statistic is capped this fraction of the threshold above it, and the page
clears when it falls to this fraction of the threshold."""
REFERENCE_SIGMAS = 1.0
"""Benefit of the doubt given to a window: this many standard errors of the reference's AP."""

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Evidence:
    """One window's evidence about a drop of calibrated AP against the reference.

    Attributes
    ----------
    observed:
        The window's calibrated average precision.
    reference:
        The reference's calibrated average precision (same pi0).
    expected:
        Mean calibrated AP of windows of this size drawn from the reference: what the window
        would show if nothing had changed (above ``reference`` for small windows: AP's
        finite-sample bias).
    spread:
        Standard deviation of those draws.
    margin:
        The allowance for the reference's own uncertainty, in AP units.
    z:
        Standardised deficit: positive when the window is worse than the reference allows.
    z_gain:
        Standardised excess: positive when it is better.
    weight:
        ``rho``: the design drop in standard deviations of this window.
    """

    observed: float
    reference: float
    expected: float
    spread: float
    margin: float
    z: float
    z_gain: float
    weight: float
    dispersion: float = 1.0
    """How much more windows vary than independent frauds make them (frauds in bursts from one
    card or terminal: app/metrics/tilt.py::dispersion); the steps are divided by it."""

    @property
    def drop_increment(self) -> float:
        """The drop CUSUM's step: log-likelihood ratio of a design drop against none (a
        quasi-likelihood: divided by the dispersion)."""
        return (self.weight * self.z - self.weight * self.weight / 2.0) / self.dispersion

    @property
    def gain_increment(self) -> float:
        """The gain CUSUM's step."""
        return (self.weight * self.z_gain - self.weight * self.weight / 2.0) / self.dispersion


@dataclass(frozen=True)
class DetectorState:
    """The two CUSUM statistics of a (model, segment) and whether the drop side pages."""

    drop: float = 0.0
    gain: float = 0.0
    paging: bool = False
    gaining: bool = False
    windows: int = 0
    """Windows with evidence since the reference (windows with no positives add none)."""


def weigh(
    observed: float,
    draws: Float64Array,
    *,
    reference: float,
    reference_se: float,
    detection_drop: float,
) -> Evidence:
    """The evidence of a window whose calibrated AP is ``observed``.

    ``draws`` are the calibrated APs of windows of the same size drawn from the reference
    (:meth:`app.metrics.null_model.NullModel.draw`); ``reference_se`` the standard error of the
    reference's own AP.
    """
    ordered = np.sort(np.asarray(draws, dtype=np.float64))
    expected = float(ordered.mean())
    spread = float(ordered.std())
    margin = REFERENCE_SIGMAS * reference_se
    if not spread > 0.0:  # a degenerate null (all draws equal): no evidence either way
        return Evidence(observed, reference, expected, spread, margin, 0.0, 0.0, 0.0)
    z = -_normal_score(observed + margin, ordered, expected, spread)
    z_gain = _normal_score(observed - margin, ordered, expected, spread)
    weight = detection_drop * reference / spread
    return Evidence(observed, reference, expected, spread, margin, z, z_gain, weight)


def _normal_score(x: float, ordered: Float64Array, mean: float, spread: float) -> float:
    """Phi^-1 of x's mid-p percentile among ``ordered``; beyond the draws, a normal tail.

    Inside the draws the percentile keeps their skew and heavy tails; past the last draw it has
    no resolution left, so the score continues as (x - mean) / spread, never less extreme than the
    last percentile the draws can tell.
    """
    n = ordered.size
    below = int(np.searchsorted(ordered, x, side="left"))
    at_or_below = int(np.searchsorted(ordered, x, side="right"))
    if below > 0 and at_or_below < n:
        return _NORMAL.inv_cdf((below + at_or_below) / (2.0 * n))
    edge = _NORMAL.inv_cdf(0.5 / n)
    tail = (x - mean) / spread
    if at_or_below == n:
        return max(-edge, tail)
    return min(edge, tail)


def threshold_for(segment_is_whole: bool, named_segments: int) -> float:
    """The paging threshold of one series: ``THRESHOLD``, plus ln S for each of a model's S
    named segments (the whole window keeps its own budget)."""
    if segment_is_whole or named_segments <= 1:
        return THRESHOLD
    return THRESHOLD + math.log(named_segments)


def advance(state: DetectorState, evidence: Evidence, threshold: float) -> DetectorState:
    """The state after one more window of evidence."""
    drop, paging = _step(state.drop, state.paging, evidence.drop_increment, threshold)
    gain, gaining = _step(state.gain, state.gaining, evidence.gain_increment, threshold)
    return replace(
        state, drop=drop, gain=gain, paging=paging, gaining=gaining, windows=state.windows + 1
    )


def _step(statistic: float, on: bool, increment: float, threshold: float) -> tuple[float, bool]:
    value = max(0.0, statistic + increment)
    on = value > threshold or (on and value > HOLD * threshold)
    if on:
        value = min(value, (1.0 + HOLD) * threshold)
    return value, on


@dataclass(frozen=True)
class WindowIncrement:
    """A window not judged yet and its early evidence's step (what the continuation reads)."""

    window_start: datetime
    increment: float


def excursion_start(judged: DetectorState, evidence: Sequence[WindowIncrement]) -> datetime | None:
    """The first window of the continued statistic's current excursion above 0 (where the drop
    it pages on began), or None if it is at 0 or was above 0 already before them."""
    statistic, start = judged.drop, None
    for item in evidence:
        before = statistic
        statistic = max(0.0, statistic + item.increment)
        if statistic == 0.0:
            start = None
        elif before == 0.0 and start is None:
            start = item.window_start
    return start


def continue_detector(
    judged: DetectorState,
    evidence: Sequence[WindowIncrement],
    *,
    threshold: float,
    was_paging: bool,
) -> DetectorState:
    """The drop CUSUM after the segment's newest judged window (``judged``), continued through
    the early evidence of the windows after it (oldest first). ``was_paging``: the continued
    statistic paged at the previous look, so its page holds until the statistic at the end
    falls to ``HOLD * threshold`` (as the judged statistic's does). The hold applies at the end
    of the sequence, not inside it: the sequence is evaluated again at every look, and its
    older windows (healthy, their statistic at 0) must not release a page that the newest
    windows' evidence still holds."""
    statistic, on = judged.drop, judged.paging
    for item in evidence:
        statistic = max(0.0, statistic + item.increment)
        on = statistic > threshold or (on and statistic > HOLD * threshold)
        if on:
            statistic = min(statistic, (1.0 + HOLD) * threshold)
    on = on or (was_paging and statistic > HOLD * threshold)
    return replace(judged, drop=statistic, paging=on, windows=judged.windows + len(evidence))
