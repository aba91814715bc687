"""A (model, segment)'s alert state, advanced one judged window at a time (no I/O).

The worker loads what a judgement needs (the segment's frozen reference, the windows to judge,
the stored alert state) and stores what comes out; everything in between is here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from app.metrics import CurveSketch, EvaluationResult, NullModel, decompose
from app.metrics.drift import Decomposition
from app.monitoring.detector import DetectorState, Evidence, advance, weigh
from app.monitoring.pi0 import WindowLabels
from app.monitoring.reference_figures import ReferenceFigures, figures_of
from app.monitoring.verdicts import FloorCheck, Judgement, PriorCheck, StoredVerdict, judge
from app.monitoring.vocabulary import AlertState, Signal

PRIMARY_METRIC = "average_precision"
"""The metric the detector and the floor watch (calibrated)."""
NULL_REPLICATES = 1000
"""Windows drawn from the reference per judged window: enough for percentiles out to about
3.1 standard deviations, past which the detector continues with a normal tail."""


@dataclass(frozen=True)
class FrozenReference:
    """One segment's reference under a reference version: its windows, pooled."""

    version: int
    first_window: datetime
    last_window: datetime
    windows: int
    labelled: int
    positives: int
    sketch: CurveSketch
    score_counts: bytes | None = None
    """Its pooled score counts as loaded (None: not pooled yet, or not loaded)."""


@dataclass(frozen=True, eq=False)
class ReferenceAtPi0:
    """A frozen reference evaluated at the model's current pi0 (built once per pass; its
    figures kept across passes: app/monitoring/reference_figures.py)."""

    reference: FrozenReference
    pi0: float

    @cached_property
    def _figures(self) -> ReferenceFigures:
        return figures_of(self.reference.sketch, self.pi0)

    @property
    def result(self) -> EvaluationResult:
        """Every metric of the pooled reference, regular and calibrated."""
        return self._figures.result

    @property
    def null_model(self) -> NullModel:
        """Windows drawn from the reference (see app/metrics/null_model.py)."""
        return self._figures.null_model

    @property
    def standard_error(self) -> float:
        """Standard error of the reference's own calibrated AP."""
        return self._figures.standard_error

    def effects(
        self, regular: Mapping[str, float | None], calibrated: Mapping[str, float | None]
    ) -> Decomposition:
        """A window's prior and performance effects against this reference."""
        return decompose(
            regular,
            calibrated,
            reference_regular=self.result.regular,
            reference_calibrated=self.result.calibrated,
        )


@dataclass(frozen=True)
class WindowToJudge:
    """What judging one mature window needs from its stored evaluation."""

    labels: WindowLabels
    regular: Mapping[str, float | None]
    calibrated: Mapping[str, float | None]
    calibrated_ci_high: float | None
    """Upper end of the window's calibrated AP interval (the floor signal's input)."""
    seed: int


@dataclass(frozen=True)
class WindowVerdict:
    """What a judgement stores on the window: its verdict, why, and the evidence."""

    judgement: Judgement
    effects: Decomposition
    evidence: dict[str, Any]

    def issued(self, judged_at: datetime, reference_version: int) -> StoredVerdict:
        """The verdict as stored: issued now, against ``reference_version``, once."""
        return StoredVerdict(
            self.judgement.verdict,
            self.judgement.reason,
            judged_at=judged_at,
            reference_version=reference_version,
            evidence=self.evidence,
        )


@dataclass(frozen=True)
class SegmentAlert:
    """The alert state of one (model, segment): the detector after its newest judged window."""

    segment: str
    reference_version: int
    state: AlertState = "warming_up"
    signals: tuple[Signal, ...] = ()
    detector: DetectorState = field(default_factory=DetectorState)
    threshold: float | None = None
    last_window: datetime | None = None
    episode_start: datetime | None = None
    reference_value: float | None = None
    reason: str | None = None
    """Why, in words: the judged detector's reason until settled, then what a user sees."""
    judged_reason: str | None = None
    """The judged detector's own reason (kept apart, so that settling again does not wrap the
    settled reason in another)."""
    early: EarlyContinuation | None = None
    """The judged statistic continued through the windows not judged yet (their early
    evidence, app/monitoring/early.py), as of the last look; None before any."""

    @classmethod
    def fresh(cls, segment: str, reference_version: int, reason: str) -> SegmentAlert:
        """A segment with no judged window under ``reference_version`` yet."""
        return cls(segment=segment, reference_version=reference_version, reason=reason)

    def ready(self, reference_value: float, threshold: float) -> SegmentAlert:
        """The state once the segment's reference is frozen (nothing judged against it yet)."""
        if self.state != "warming_up":
            return replace(self, reference_value=reference_value, threshold=threshold)
        return replace(
            self,
            state="ok",
            reference_value=reference_value,
            threshold=threshold,
            reason="reference frozen; waiting for the first mature window after it",
        )


@dataclass(frozen=True)
class EarlyContinuation:
    """The drop statistic continued through the early evidence of ``windows`` windows not judged
    yet (the oldest starting at ``first_window``), at the look ``as_of``."""

    detector: DetectorState
    windows: int
    as_of: datetime | None
    first_window: datetime | None = None


def settle(alert: SegmentAlert, early: EarlyContinuation, *, before: SegmentAlert) -> SegmentAlert:
    """The alert state a user sees, after the judged windows (``alert``) and the early evidence
    of the windows after them (``early``); ``before`` is the state this pass started from.

    The page is the continued statistic's: it pages on early evidence alone (signal ``early``),
    goes on as the windows mature and their final evidence takes over (signal ``cusum``) without
    clearing and re-raising, and clears when the newest evidence, judged or early, says the drop
    ended. Without early evidence the continued statistic is the judged one.
    """
    if alert.state == "warming_up":
        return replace(alert, early=early)
    judged = alert.detector
    continued = early.detector
    signals: list[Signal] = []
    if continued.paging:
        signals.append("cusum" if judged.paging or early.windows == 0 else "early")
    if "floor" in alert.signals:
        signals.append("floor")
    state: AlertState = "drop" if signals else "ok"
    episode = None
    if state == "drop":
        ongoing = before.episode_start if before.state == "drop" else None
        episode = ongoing or alert.episode_start or early.first_window or early.as_of
    judged_reason = alert.judged_reason if alert.judged_reason is not None else alert.reason
    return replace(
        alert,
        state=state,
        signals=tuple(signals),
        episode_start=episode,
        reason=_settled_reason(alert, judged_reason, early, signals),
        judged_reason=judged_reason,
        early=early,
    )


def _settled_reason(
    alert: SegmentAlert, judged_reason: str | None, early: EarlyContinuation, signals: list[Signal]
) -> str:
    threshold = alert.threshold if alert.threshold is not None else float("nan")
    judged = alert.detector.drop
    continued = early.detector.drop
    base = judged_reason or ""
    if not early.windows:
        return base
    summary = (
        f"drop evidence {continued:.3g} of {threshold:.3g} needed to page, with the early "
        f"evidence of the {early.windows} windows whose labels are still arriving "
        f"(judged windows alone: {judged:.3g})"
    )
    if "early" in signals:
        return f"early evidence: {summary}; newest judged window: {base}"
    if alert.detector.paging and not early.detector.paging:
        return (
            f"the newest labels outweigh the judged drop: {summary}; newest judged window: {base}"
        )
    return f"{base}; {summary}" if base else summary


@dataclass(frozen=True)
class Tuning:
    """How a segment's windows are weighed: its paging threshold, the model's design drop
    (``detection_drop``) and alert floor, and the dispersion of its windows (1: independent
    frauds; frauds in bursts vary more, app/metrics/tilt.py::dispersion)."""

    threshold: float
    detection_drop: float
    alert_floor: float | None
    dispersion: float = 1.0


def judge_window(
    alert: SegmentAlert, window: WindowToJudge, reference: ReferenceAtPi0, tuning: Tuning
) -> tuple[SegmentAlert, WindowVerdict]:
    """Weigh one mature window after the reference, advance the detector, issue the verdict."""
    threshold, alert_floor = tuning.threshold, tuning.alert_floor
    observed = window.calibrated.get(PRIMARY_METRIC)
    evidence: Evidence | None = None
    detector = alert.detector
    if observed is not None and window.labels.positives > 0 and window.labels.negatives > 0:
        draws = reference.null_model.draw(
            window.labels.positives,
            window.labels.negatives,
            replicates=NULL_REPLICATES,
            seed=window.seed,
        )
        weighed = weigh(
            observed,
            draws,
            reference=reference.null_model.value,
            reference_se=reference.standard_error,
            detection_drop=tuning.detection_drop,
        )
        evidence = replace(weighed, dispersion=tuning.dispersion)
        detector = advance(detector, evidence, threshold)
    effects = reference.effects(window.regular, window.calibrated)
    primary = effects.metrics.get(PRIMARY_METRIC)
    prior = PriorCheck(
        positives=window.labels.positives,
        labelled=window.labels.labelled,
        reference_positives=reference.reference.positives,
        reference_labelled=reference.reference.labelled,
        prior_effect=primary.prior_effect if primary is not None else None,
        reference_regular=reference.result.regular.get(PRIMARY_METRIC),
    )
    judgement = judge(
        detector,
        evidence,
        threshold=threshold,
        prior_shifted=prior.shifted(),
        floor=FloorCheck(alert_floor, window.calibrated_ci_high),
    )
    state: AlertState = "drop" if judgement.signals else "ok"
    started = window.labels.window_start
    episode = (alert.episode_start or started) if state == "drop" else None
    updated = replace(
        alert,
        state=state,
        signals=judgement.signals,
        detector=detector,
        threshold=threshold,
        last_window=_newest(alert.last_window, started),
        episode_start=episode,
        reference_value=reference.null_model.value,
        reason=judgement.reason,
        judged_reason=judgement.reason,
    )
    record = _evidence_record(evidence, detector, threshold, judgement, reference.reference)
    return updated, WindowVerdict(judgement, effects, record)


def _newest(a: datetime | None, b: datetime) -> datetime:
    return b if a is None or b > a else a


def _evidence_record(
    evidence: Evidence | None,
    detector: DetectorState,
    threshold: float,
    judgement: Judgement,
    reference: FrozenReference,
) -> dict[str, Any]:
    """The ``window_metrics.evidence`` JSON: the numbers behind the verdict."""
    record: dict[str, Any] = {
        "reference_version": reference.version,
        "signals": list(judgement.signals),
        "drop_statistic": detector.drop,
        "gain_statistic": detector.gain,
        "threshold": threshold,
    }
    if evidence is not None:
        record.update(
            observed=evidence.observed,
            reference=evidence.reference,
            expected=evidence.expected,
            spread=evidence.spread,
            margin=evidence.margin,
            z=evidence.z,
            weight=evidence.weight,
            dispersion=evidence.dispersion,
        )
    return record
