"""A mature window's verdict from the detector's state and the prior-shift test, and the form
in which verdicts are stored.

A verdict is issued once, when the window is first judged (mature, after its segment's reference);
later recomputations (late labels, a new pi0 version, a new reference) update the window's values
but never its verdict, so nothing ever pages about a window that nothing new touched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.monitoring.detector import DetectorState, Evidence
from app.monitoring.vocabulary import Signal, Verdict

PRIOR_SHIFT_Z = 3.0
"""A window's positive ratio moved if a two-proportion test puts it 3 standard errors from the
reference's (about 99.7%, two-sided)."""
PRIOR_SHIFT_MATERIAL = 0.05
"""...and moved the regular average precision by at least 5% of the reference's value."""


@dataclass(frozen=True)
class PriorCheck:
    """The inputs of the prior-shift test: counts of the window and of its reference, and the
    prior effect on the regular average precision (from the drift decomposition)."""

    positives: int
    labelled: int
    reference_positives: int
    reference_labelled: int
    prior_effect: float | None
    reference_regular: float | None

    def shifted(self) -> bool:
        """Whether the fraud rate moved, significantly and materially."""
        if self.labelled == 0 or self.reference_labelled == 0:
            return False
        p = self.reference_positives / self.reference_labelled
        se = math.sqrt(p * (1.0 - p) * (1.0 / self.labelled + 1.0 / self.reference_labelled))
        pi = self.positives / self.labelled
        significant = abs(pi - p) > PRIOR_SHIFT_Z * se if se > 0 else pi != p
        if self.prior_effect is None or self.reference_regular is None:
            return significant
        return significant and abs(self.prior_effect) >= PRIOR_SHIFT_MATERIAL * abs(
            self.reference_regular
        )


@dataclass(frozen=True)
class FloorCheck:
    """The model's alert floor beside the top of the window's calibrated AP interval: the floor
    signal needs the whole interval under the floor. No test when either is None (no floor
    set, or no interval)."""

    floor: float | None
    ci_high: float | None

    def breached(self) -> bool:
        """Whether the whole interval lies under the floor."""
        return self.floor is not None and self.ci_high is not None and self.ci_high < self.floor

    def describe(self) -> str | None:
        """The comparison in words, None without a test."""
        if self.floor is None or self.ci_high is None:
            return None
        relation = "below" if self.breached() else "not below"
        return f"interval top {self.ci_high:.4g} {relation} the floor {self.floor:.4g}"


@dataclass(frozen=True)
class Judgement:
    """A window's verdict, the signals behind it and why, in words."""

    verdict: Verdict
    signals: tuple[Signal, ...]
    reason: str


def judge(
    state: DetectorState,
    evidence: Evidence | None,
    *,
    threshold: float,
    prior_shifted: bool,
    floor: FloorCheck,
) -> Judgement:
    """The verdict of a window whose evidence moved the detector to ``state``.

    ``evidence`` is None for a mature window without positives (nothing to weigh); ``floor``
    holds the model's alert floor and the top of the window's calibrated AP interval.
    """
    signals: list[Signal] = []
    if state.paging:
        signals.append("cusum")
    if floor.breached():
        signals.append("floor")
    if signals:
        verdict: Verdict = "both" if prior_shifted else "performance_drop"
    elif state.gaining:
        verdict = "both" if prior_shifted else "performance_gain"
    elif evidence is None and not prior_shifted:
        return Judgement(
            "insufficient_data", (), "no labelled positives: calibrated AP is undefined"
        )
    else:
        verdict = "prior_shift" if prior_shifted else "stable"
    return Judgement(verdict, tuple(signals), _reason(state, evidence, threshold, floor))


def _reason(
    state: DetectorState,
    evidence: Evidence | None,
    threshold: float,
    floor: FloorCheck,
) -> str:
    parts = []
    if evidence is not None:
        parts.append(
            f"calibrated AP {evidence.observed:.4g} against reference {evidence.reference:.4g} "
            f"(a window this size would show {evidence.expected:.4g} +- {evidence.spread:.2g} "
            f"if nothing changed; deficit z = {evidence.z:+.2f})"
        )
    else:
        parts.append("no labelled positives in this window")
    parts.append(f"drop evidence {state.drop:.3g} of {threshold:.3g} needed to page")
    compared = floor.describe()
    if compared is not None:
        parts.append(compared)
    return "; ".join(parts)


@dataclass(frozen=True)
class StoredVerdict:
    """The judgement columns of a ``window_metrics`` row.

    ``judged_at`` is None while the verdict is provisional (the window is not mature yet, or its
    segment has no reference yet); once set, the verdict is history and every later
    recomputation of the window keeps it.
    """

    verdict: Verdict
    reason: str | None
    judged_at: datetime | None = None
    reference_version: int | None = None
    evidence: dict[str, Any] | None = None

    def columns(self) -> dict[str, Any]:
        """The row's columns."""
        return {
            "verdict": self.verdict,
            "verdict_reason": self.reason,
            "judged_at": self.judged_at,
            "reference_version": self.reference_version,
            "evidence": self.evidence,
        }


def within_reference(
    part_of_it: bool, reference_version: int, judged_at: datetime
) -> StoredVerdict:
    """The verdict of a mature window at or before its segment's reference's last window:
    ``reference`` if it is one of the reference's windows, ``insufficient_data`` if it matured
    after the reference was frozen (it is never judged: the reference's period is its own)."""
    if part_of_it:
        verdict: Verdict = "reference"
        reason = f"part of reference version {reference_version}"
    else:
        verdict = "insufficient_data"
        reason = f"not judged: before or during the reference of version {reference_version}"
    return StoredVerdict(verdict, reason, judged_at=judged_at, reference_version=reference_version)


def provisional(counts_reason: str | None, shift: str | None = None) -> StoredVerdict:
    """The verdict of a window not judged yet: ``score_shift`` if its scores are one (``shift``
    says why: app/monitoring/nowcast.py), ``insufficient_data`` with the reason otherwise."""
    if shift is not None:
        return StoredVerdict("score_shift", shift)
    return StoredVerdict("insufficient_data", counts_reason or "not judged yet")
