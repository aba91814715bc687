"""A window's early estimate as stored and shown (``window_metrics.early``), and the alert
precision from investigators' feedback.

Feedback covers flagged rows only, so the reviewed alerts' precision says nothing about the
frauds the model missed and enters no other value: it is shown apart, the day after.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from statistics import NormalDist
from typing import Any

import numpy as np

from app.metrics.early_estimate import EarlyEstimate
from app.metrics.reporting import Arrivals
from app.metrics.types import BoolArray, Interval
from app.monitoring.early import EarlyEvidence
from app.monitoring.vocabulary import LABEL_SOURCE_CODES

_Z95 = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True)
class FeedbackPrecision:
    """The alerts' precision as the investigators' feedback shows it so far."""

    value: float
    interval: Interval
    reviewed: int
    confirmed: int

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "value": self.value,
            "ci": list(self.interval),
            "reviewed": self.reviewed,
            "confirmed": self.confirmed,
        }


def feedback_precision(
    arrivals: Arrivals, flagged_bins: BoolArray, look: int | None
) -> FeedbackPrecision | None:
    """Confirmed frauds among the flagged rows investigators reviewed by ``look`` (a Wilson 95%
    interval); None if none was reviewed yet."""
    code = LABEL_SOURCE_CODES["feedback"]
    confirmed = arrivals.frauds_where(flagged_bins, source=code, by_look=look)
    cleared = arrivals.cleared(flagged=True, source=code, by_look=look)
    reviewed = confirmed + cleared
    if reviewed == 0:
        return None
    return FeedbackPrecision(confirmed / reviewed, wilson(confirmed, reviewed), reviewed, confirmed)


def wilson(successes: int, trials: float) -> Interval:
    """The Wilson score 95% interval of a binomial proportion (``trials`` may be an effective,
    fractional sample size: the trials over their dispersion)."""
    p = successes / trials
    z2 = _Z95 * _Z95
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def labels_so_far(arrivals: Arrivals, look: int) -> dict[str, Any]:
    """The labels a window has by ``look``: frauds and rows cleared, by source (the counts a
    user sees beside the estimate)."""
    by_source: dict[str, int] = {}
    everywhere = np.ones(int(arrivals.fraud_bins.max(initial=0)) + 1, dtype=bool)
    for name, code in LABEL_SOURCE_CODES.items():
        frauds = arrivals.frauds_where(everywhere, source=code, by_look=look)
        cleared = arrivals.cleared(flagged=True, source=code, by_look=look) + arrivals.cleared(
            flagged=False, source=code, by_look=look
        )
        if frauds or cleared:
            by_source[name] = frauds + cleared
    frauds = arrivals.frauds_where(everywhere, source=None, by_look=look)
    cleared = arrivals.cleared(flagged=True, source=None, by_look=look) + arrivals.cleared(
        flagged=False, source=None, by_look=look
    )
    return {"frauds": frauds, "legitimate": cleared, "by_source": by_source}


@dataclass(frozen=True)
class ScoresBeside:
    """The fraud rate the labels so far imply beside the one the scores alone give (the nowcast,
    app/monitoring/nowcast.py), and how far apart they are.

    The two are not pooled into one estimate: the scores-only rate assumes the reference's
    fraud scores still hold, which is exactly what fails when the model got worse (its frauds
    then score like legitimate rows and read as less fraud), so pooling would pull the estimate
    toward the wrong value when it matters. Their disagreement is shown instead: labels saying
    more fraud than the scores explain (``z`` well above 2) is evidence that the frauds score
    lower than the reference's, which the early drop test weighs formally.
    """

    scores_pi: float
    scores_ci: Interval | None
    z: float | None
    """(labels' pi - scores' pi) over its standard error (from the two 95% intervals)."""

    @classmethod
    def of(
        cls, labels_pi: float | None, labels_ci: Interval | None, nowcast: dict[str, Any] | None
    ) -> ScoresBeside | None:
        """The comparison, when both estimates exist."""
        if nowcast is None or not isinstance(nowcast.get("pi"), int | float):
            return None
        scores_pi = float(nowcast["pi"])
        pair = nowcast.get("pi_ci")
        scores_ci = (float(pair[0]), float(pair[1])) if pair else None
        z = None
        spreads = [_spread(labels_ci), _spread(scores_ci)]
        if labels_pi is not None and None not in spreads:
            se = math.sqrt(sum(s * s for s in spreads if s is not None))
            z = (labels_pi - scores_pi) / se if se > 0 else None
        return cls(scores_pi, scores_ci, z)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "pi": self.scores_pi,
            "pi_ci": list(self.scores_ci) if self.scores_ci else None,
            "disagreement_z": self.z,
        }


def _spread(interval: Interval | None) -> float | None:
    """The standard error a 95% interval implies (None without one). On the plain scale: a
    scores-only interval often starts at 0, where a log scale has no error to read."""
    if interval is None or interval[1] < interval[0]:
        return None
    return (interval[1] - interval[0]) / (2.0 * _Z95)


@dataclass(frozen=True)
class EarlyView:
    """A window's stored early estimate (``window_metrics.early``): where it stands, what it
    rests on, and the key that says whether it must be computed again."""

    as_of: datetime
    look: int
    key: str
    """What the estimate was computed from: the look, the labels, pi0 and the reference."""
    labels: dict[str, Any]
    estimate: EarlyEstimate | None
    evidence: EarlyEvidence | None
    feedback: FeedbackPrecision | None
    reason: str | None
    pi0: float | None
    reference_version: int
    scores: ScoresBeside | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``"estimate": true`` marks every value as an estimate of what the
        window's complete labels will show."""
        out: dict[str, Any] = {
            "estimate": True,
            "as_of": self.as_of.isoformat(),
            "look": self.look,
            "key": self.key,
            "reference_version": self.reference_version,
            "pi0": self.pi0,
            "labels_so_far": self.labels,
            "alert_precision_feedback": self.feedback.to_dict() if self.feedback else None,
            "reason": self.reason,
        }
        if self.estimate is not None:
            estimated = self.estimate.to_dict()
            estimated.pop("look")
            out.update(estimated)
        if self.evidence is not None:
            out["evidence"] = self.evidence.to_dict()
        out["scores_only"] = self.scores.to_dict() if self.scores is not None else None
        return out


def stored_increment(early: dict[str, Any] | None, key: str | None) -> float | None:
    """A stored early estimate's evidence step, if it was computed from ``key`` (any key if
    None: an older estimate's step, kept for a pass that had no time left to redo it)."""
    if early is None or (key is not None and early.get("key") != key):
        return None
    evidence = early.get("evidence")
    return float(evidence["increment"]) if evidence is not None else 0.0
