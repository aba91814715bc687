"""The drop detector's use cases: read a model's alert states and references, re-anchor."""

from __future__ import annotations

from typing import cast

from sqlalchemy.orm import Session

from app.db.clock import database_now
from app.db.metrics_tables import ReferenceSpec
from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.observability import ObservabilityRepository
from app.errors import NotFoundError
from app.monitoring.vocabulary import AlertState, ReferenceKind, Verdict, signals_of
from app.schemas.monitoring import (
    AlertsOut,
    AutomaticReference,
    AwaitingLabelsOut,
    EarlyAlertOut,
    PeriodReference,
    ReferenceOut,
    ReferenceRequest,
    ReferenceVersionOut,
    SegmentAlertOut,
    SegmentReferenceOut,
)
from app.services.models import get_model

_SEVERITY: dict[AlertState, int] = {"drop": 0, "ok": 1, "warming_up": 2}


def alerts(session: Session, name: str) -> AlertsOut:
    """The model's alert state per segment, worst first."""
    model = get_model(session, name)
    rows = MonitoringRepository(session).alert_states(model.id)
    reads = ObservabilityRepository(session)
    verdicts = {row.segment: row.verdict for row in reads.alert_rows(model.id)}
    waiting = {a.segment: a for a in reads.awaiting_labels(model.id)}
    segments = []
    for segment in sorted(set(rows) | set(waiting)):
        row = rows.get(segment)
        wait = waiting.get(segment)
        awaiting = AwaitingLabelsOut(windows=wait.windows, rows=wait.rows) if wait else None
        awaiting = awaiting or AwaitingLabelsOut(windows=0, rows=0)
        if row is None:  # windows stored, no detector pass yet
            segments.append(
                SegmentAlertOut(
                    segment=segment,
                    state="warming_up",
                    signals=[],
                    reason="not judged yet",
                    reference_version=0,
                    reference_average_precision=None,
                    drop_evidence=0.0,
                    threshold=None,
                    evidence_windows=0,
                    newest_judged_window=None,
                    newest_judged_verdict=None,
                    episode_start=None,
                    awaiting_labels=awaiting,
                )
            )
            continue
        verdict = verdicts.get(segment)
        segments.append(
            SegmentAlertOut(
                segment=segment,
                state=cast(AlertState, row.state),
                signals=list(signals_of(row.signals)),
                reason=row.reason,
                reference_version=row.reference_version,
                reference_average_precision=row.reference_value,
                drop_evidence=row.drop_statistic,
                threshold=row.threshold,
                evidence_windows=row.evidence_windows,
                newest_judged_window=row.last_window,
                newest_judged_verdict=cast(Verdict, verdict) if row.last_window else None,
                episode_start=row.episode_start,
                awaiting_labels=awaiting,
                early=EarlyAlertOut(
                    drop_evidence=row.early_statistic,
                    paging=row.early_paging,
                    windows=row.early_windows,
                    as_of=row.early_as_of,
                ),
            )
        )
    segments.sort(key=lambda s: (_SEVERITY[s.state], s.segment != "all", s.segment))
    overall: AlertState = min(
        (s.state for s in segments), key=_SEVERITY.__getitem__, default="warming_up"
    )
    return AlertsOut(model=model.name, state=overall, segments=segments)


def reference_info(session: Session, name: str) -> ReferenceOut:
    """The model's reference versions and each segment's reference under the current one."""
    model = get_model(session, name)
    repository = MonitoringRepository(session)
    specs = repository.specs(model.id)  # version 1 is cut when the model is registered
    if not specs:
        raise NotFoundError(f"model {name!r} has no reference version", extra={"model": name})
    current = specs[-1]
    frozen = repository.segment_references(model.id, current.version)
    states = repository.alert_states(model.id)
    segments = []
    for segment in sorted(set(frozen) | set(states)):
        ref = frozen.get(segment)
        state = states.get(segment)
        value = (
            state.reference_value
            if state is not None and state.reference_version == current.version
            else None
        )
        segments.append(
            SegmentReferenceOut(
                segment=segment,
                ready=ref is not None,
                first_window=ref.first_window if ref else None,
                last_window=ref.last_window if ref else None,
                windows=ref.windows if ref else 0,
                positives=ref.positives if ref else 0,
                calibrated_average_precision=value if ref else None,
                reason=None if ref else (state.reason if state else "not collected yet"),
            )
        )
    return ReferenceOut(
        model=model.name,
        current=_version_out(current),
        versions=[_version_out(s) for s in specs],
        segments=segments,
    )


def set_reference(session: Session, name: str, request: ReferenceRequest) -> ReferenceOut:
    """Cut a new reference version (an explicit act: after a retrain, or to accept the current
    state as normal). Verdicts already issued stay; every segment's detector starts afresh
    against its new reference, which the worker freezes on its next pass over the model."""
    model = get_model(session, name, lock=True)  # one new version at a time, between passes
    repository = MonitoringRepository(session)
    if isinstance(request, PeriodReference):
        repository.add_spec(model.id, "period", start_date=request.start, end_date=request.end)
    elif isinstance(request, AutomaticReference):
        repository.add_spec(model.id, "automatic", start_date=request.start)
    else:
        # The database's clock, as ingest's (app.services.ingest.request_time): no replica's
        # clock decides which windows are the recent ones.
        repository.add_spec(model.id, "recent", as_of=database_now(session))
    repository.touch_newest_window(model.id)
    return reference_info(session, name)


def _version_out(spec: ReferenceSpec) -> ReferenceVersionOut:
    return ReferenceVersionOut(
        version=spec.version,
        kind=cast(ReferenceKind, spec.kind),
        start=spec.start_date,
        end=spec.end_date,
        as_of=spec.as_of,
        created_at=spec.created_at,
    )
