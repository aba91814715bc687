"""Run the drop detector of a model after its windows were stored (the worker's I/O around
app/monitoring).

In the store transaction, after a window (or a whole series) was written:

1. each segment without a frozen reference under the model's current reference version tries to
   freeze one (app/monitoring/reference.py); its windows are pooled from their stored sketches
   (app/metrics/pooling.py) and marked with the verdict ``reference``;
2. every mature window that has no verdict yet and lies after its segment's reference is judged,
   oldest first, advancing the segment's alert state (app/monitoring/alerts.py); its verdict is
   issued once and kept by every later recomputation;
3. the alert states are stored: one row per (model, segment), which the API and ``/metrics``
   read.

Mature windows at or before a reference's last window that are not part of it (they matured
after it was frozen) are marked ``insufficient_data`` and never judged.

A pass judges at most ``JUDGEMENTS_PER_PASS`` windows (a few seconds of draws): a model's first
pass after an upgrade, or after a reference moved back in time, may find years of mature windows
to judge, and one transaction longer than the worker's lease would be lost and retried forever.
The rest waits for the next pass, which the model's newest window being re-dirtied schedules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.db.metrics_tables import SegmentReference
from app.db.repositories.monitoring import (
    MonitoringRepository,
    UnjudgedWindow,
    WindowForJudging,
)
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.db.rows import from_row
from app.db.tables import MonitoredModel
from app.db.types import utcnow
from app.metrics import CurveSketch, Decomposition, pool_sketches
from app.monitoring.alerts import (
    PRIMARY_METRIC,
    EarlyContinuation,
    FrozenReference,
    ReferenceAtPi0,
    SegmentAlert,
    Tuning,
    WindowToJudge,
    judge_window,
    settle,
)
from app.monitoring.detector import (
    continue_detector,
    excursion_start,
    threshold_for,
)
from app.monitoring.early import EarlyPass
from app.monitoring.maturity import MaturityRule
from app.monitoring.reference import ReferenceChoice, ReferenceSpec, choose_reference
from app.monitoring.verdicts import within_reference
from app.monitoring.vocabulary import SEGMENT_ALL
from app.services.model_settings import monitor_settings, reference_spec
from app.windows.alert_rows import alert_of, alert_row
from app.windows.evaluation import seed_for
from app.windows.model_pass import ModelPass

JUDGEMENTS_PER_PASS = 500


@dataclass
class _Budget:
    """How many more windows this pass may judge."""

    left: int
    exhausted: bool = False

    def take(self, wanted: int) -> int:
        granted = min(wanted, self.left)
        self.left -= granted
        self.exhausted = self.exhausted or granted < wanted
        return granted


@dataclass
class _Judging:
    """One detector pass over a model's segments: what it reads with, what it collects."""

    monitoring: MonitoringRepository
    model: MonitoredModel
    maturity: MaturityRule
    budget: _Budget = field(default_factory=lambda: _Budget(JUDGEMENTS_PER_PASS))
    judged: list[dict[str, Any]] = field(default_factory=list)
    effects: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _SegmentToJudge:
    """One segment's part of the pass: its alert so far, its reference, its windows without a
    verdict, the windows of a reference frozen in this pass (``chosen``), its detector's tuning."""

    alert: SegmentAlert
    reference: ReferenceAtPi0
    unjudged: Sequence[UnjudgedWindow]
    chosen: set[datetime]
    tuning: Tuning


@dataclass
class ModelReferences:
    """A model's current reference version and its segments' frozen references at one pi0."""

    spec: ReferenceSpec
    pi0: float | None
    frozen: dict[str, ReferenceAtPi0] = field(default_factory=dict)

    def at(self, segment: str) -> ReferenceAtPi0 | None:
        """The segment's frozen reference, if it has one and pi0 exists."""
        return self.frozen.get(segment) if self.pi0 is not None else None

    def effects(self, segment: str, result: Mapping[str, Any] | None) -> Decomposition | None:
        """Prior and performance effects of a stored result against the segment's reference."""
        reference = self.at(segment)
        if reference is None or result is None:
            return None
        return reference.effects(result["regular"], result["calibrated"])


def load_references(
    monitoring: MonitoringRepository, model: MonitoredModel, pi0: float | None
) -> ModelReferences:
    """The model's current reference version (cutting version 1 if it has none) and the
    references its segments froze under it."""
    row = monitoring.current_spec(model.id) or monitoring.add_spec(model.id, "automatic")
    references = ModelReferences(spec=reference_spec(model, row), pi0=pi0)
    if pi0 is not None:
        for segment, frozen in monitoring.segment_references(model.id, row.version).items():
            references.frozen[segment] = ReferenceAtPi0(_frozen(frozen), pi0)
    return references


def _frozen(row: SegmentReference) -> FrozenReference:
    return from_row(FrozenReference, row, sketch=CurveSketch.from_bytes(row.sketch))


def run_detector(
    monitoring: MonitoringRepository,
    metrics_repo: WindowMetricsRepository,
    now: ModelPass,
    references: ModelReferences,
    early: EarlyPass,
) -> None:
    """Freeze the references that can be frozen, judge what can be judged, continue each
    segment's statistic through the early evidence of the windows after (``early``), store the
    states."""
    model = now.model
    settings = monitor_settings(model, now.maturity)
    unjudged = _unjudged(monitoring, model.id, now.maturity)
    stored = monitoring.alert_states(model.id)
    segments = sorted(set(unjudged) | set(stored), key=lambda s: (s != SEGMENT_ALL, s))
    pending_reasons: dict[str, str] = {}
    chosen: dict[str, set[datetime]] = defaultdict(set)  # references frozen in this pass
    if references.pi0 is not None:
        for segment in segments:
            if segment not in references.frozen:
                choice = _try_freeze(monitoring, metrics_repo, now, references, segment)
                if choice.ready:
                    chosen[segment] = {w.window_start for w in choice.windows}
                else:
                    pending_reasons[segment] = choice.reason
    named = sum(1 for s in references.frozen if s != SEGMENT_ALL)
    judging = _Judging(monitoring, model, now.maturity)
    before = {s: alert_of(stored.get(s), s, references.spec.version) for s in segments}
    parts: dict[str, _SegmentToJudge] = {}
    for segment in segments:
        reference = references.at(segment)
        if reference is not None:
            threshold = threshold_for(segment == SEGMENT_ALL, named)
            alert = before[segment].ready(reference.null_model.value, threshold)
            dispersion = early.dispersion.get(segment, 1.0)
            tuning = Tuning(threshold, settings.detection_drop, settings.alert_floor, dispersion)
            parts[segment] = _SegmentToJudge(
                alert, reference, unjudged.get(segment, []), chosen[segment], tuning
            )
    # The windows each segment judges in this pass (in segment order, as the budget lasts),
    # then their stored values in one read for every segment (it was a round trip each).
    after = {segment: _windows_after(judging, part) for segment, part in parts.items()}
    values = monitoring.for_judging(
        model.id, [(w.labels.window_start, s) for s, windows in after.items() for w in windows]
    )
    states: list[dict[str, Any]] = []
    for segment in segments:
        part = parts.get(segment)
        if part is None:
            reason = pending_reasons.get(segment, "no reference prior pi0 yet")
            alert = SegmentAlert.fresh(segment, references.spec.version, reason)
        else:
            alert = _judge_segment(judging, part, after[segment], values)
            alert = _with_early(alert, before[segment], early, part.tuning.threshold)
        states.append(alert_row(model.id, alert))
    monitoring.replace_alert_states(model.id, states)
    monitoring.record_judgements(model.id, judging.judged)
    monitoring.record_effects(model.id, judging.effects)
    if judging.budget.exhausted:
        monitoring.touch_newest_window(model.id)


def _unjudged(
    monitoring: MonitoringRepository, model_id: int, maturity: MaturityRule
) -> dict[str, list[UnjudgedWindow]]:
    """The model's windows without a verdict, by segment; those that matured since they were
    stored are marked mature."""
    unjudged: dict[str, list[UnjudgedWindow]] = defaultdict(list)
    newly_mature = []
    for window in monitoring.unjudged(model_id):
        unjudged[window.segment].append(window)
        if not window.mature and maturity.is_mature(window.labels):
            newly_mature.append((window.labels.window_start, window.segment))
    monitoring.mark_mature(model_id, newly_mature)
    return unjudged


def _with_early(
    alert: SegmentAlert, before: SegmentAlert, early: EarlyPass, threshold: float
) -> SegmentAlert:
    """``alert`` after its newest judged window, continued through the early evidence of the
    windows after it (app/monitoring/early.py), settled into the state a user sees."""
    steps = [
        step
        for step in early.steps.get(alert.segment, [])
        if alert.last_window is None or step.window_start > alert.last_window
    ]
    was_paging = before.early is not None and before.early.detector.paging
    continued = continue_detector(alert.detector, steps, threshold=threshold, was_paging=was_paging)
    start = excursion_start(alert.detector, steps)
    continuation = EarlyContinuation(continued, len(steps), early.as_of, start)
    return settle(alert, continuation, before=before)


def _try_freeze(
    monitoring: MonitoringRepository,
    metrics_repo: WindowMetricsRepository,
    now: ModelPass,
    references: ModelReferences,
    segment: str,
) -> ReferenceChoice:
    """Freeze the segment's reference if its windows are there (the choice says which, or why
    not)."""
    assert references.pi0 is not None
    model = now.model
    settings = monitor_settings(model, now.maturity)
    choice: ReferenceChoice = choose_reference(
        references.spec, settings.rule, metrics_repo.history(model.id, segment)
    )
    if not choice.ready:
        return choice
    starts = [w.window_start for w in choice.windows]
    sketches = [
        CurveSketch.from_bytes(row.sketch)
        for row in metrics_repo.windows(model.id, segment, starts)
        if row.sketch is not None
    ]
    pooled = pool_sketches(sketches, threshold=model.threshold)
    row = SegmentReference(
        model_id=model.id,
        segment=segment,
        version=references.spec.version,
        first_window=starts[0],
        last_window=starts[-1],
        windows=len(starts),
        labelled=sum(w.labelled for w in choice.windows),
        positives=choice.positives,
        sketch=pooled.to_bytes(),
        frozen_at=utcnow(),
    )
    monitoring.add_segment_reference(row)
    references.frozen[segment] = ReferenceAtPi0(_frozen(row), references.pi0)
    return choice


def _windows_after(judging: _Judging, part: _SegmentToJudge) -> list[UnjudgedWindow]:
    """The segment's mature windows after its reference that this pass judges (the oldest
    first, as many as the pass's budget grants); the mature windows at or before it get their
    verdict here: ``reference`` for the windows of a reference frozen in this pass
    (``chosen``), ``insufficient_data`` for the others."""
    frozen = part.reference.reference
    mature = [w for w in part.unjudged if judging.maturity.is_mature(w.labels)]
    now = utcnow()
    for window in mature:
        start = window.labels.window_start
        if start > frozen.last_window:
            continue
        verdict = within_reference(start in part.chosen, frozen.version, now)
        judging.judged.append(
            {"window_start": start, "segment": part.alert.segment, **verdict.columns()}
        )
    after = [w for w in mature if w.labels.window_start > frozen.last_window]
    return after[: judging.budget.take(len(after))]  # the oldest first: the detector runs in order


def _judge_segment(
    judging: _Judging,
    part: _SegmentToJudge,
    after: Sequence[UnjudgedWindow],
    stored: Mapping[tuple[datetime, str], WindowForJudging],
) -> SegmentAlert:
    """Judge the segment's windows ``after`` its reference (their stored values in
    ``stored``), oldest first, advancing its alert state."""
    model, judged = judging.model, judging.judged
    alert, reference = part.alert, part.reference
    frozen = reference.reference
    now = utcnow()
    for window in after:
        start = window.labels.window_start
        row = stored.get((start, alert.segment))
        if row is None or row.result is None:
            continue
        alert, outcome = judge_window(
            alert,
            WindowToJudge(
                labels=window.labels,
                regular=row.result["regular"],
                calibrated=row.result["calibrated"],
                calibrated_ci_high=_ci_high(row.intervals),
                seed=seed_for(model.name, start, alert.segment, "|detector"),
            ),
            reference,
            part.tuning,
        )
        verdict = outcome.issued(now, frozen.version)
        judged.append(
            {
                "window_start": start,
                "segment": alert.segment,
                **verdict.columns(),
                "decomposition": {**outcome.effects.to_dict(), "reference_version": frozen.version},
            }
        )
        judging.effects.extend(_effect_rows(start, alert.segment, outcome.effects))
    return alert


def _ci_high(intervals: Mapping[str, Any] | None) -> float | None:
    bounds = (intervals or {}).get("calibrated", {}).get(PRIMARY_METRIC)
    return float(bounds[1]) if bounds is not None else None


def _effect_rows(start: datetime, segment: str, effects: Decomposition) -> Iterable[dict[str, Any]]:
    for metric, change in effects.metrics.items():
        yield {
            "window_start": start,
            "segment": segment,
            "metric": metric,
            "prior_effect": change.prior_effect if change is not None else None,
            "performance_effect": change.performance_effect if change is not None else None,
        }
