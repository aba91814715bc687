"""Reading the worker's results: metric series, one window in detail, pi0, queue status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy.orm import Session

from app.db.clock import database_now
from app.db.metrics_tables import WindowMetrics, WindowMetricValue
from app.db.repositories.heartbeats import HeartbeatRepository
from app.db.repositories.models import ModelRepository
from app.db.repositories.pi0 import Pi0Repository
from app.db.repositories.window_metrics import SeriesValue, WindowMetricsRepository
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import MonitoredModel
from app.errors import ModelNotFoundError, NotFoundError, PayloadValidationError
from app.metrics import METRIC_NAMES
from app.metrics.types import Interval
from app.monitoring.maturity import MaturityRule
from app.monitoring.pi0 import WindowLabels, estimate_pi0, usable_windows
from app.monitoring.vocabulary import Verdict
from app.schemas.metrics import (
    EvidenceOut,
    MetricPoint,
    MetricSeries,
    MetricValues,
    ParkedWindowOut,
    Pi0HistoryPoint,
    Pi0Out,
    Pi0VersionOut,
    StatusOut,
    WindowDetail,
    WindowMetricOut,
    WorkerOut,
)
from app.services.early import early_out, early_point
from app.services.model_settings import maturity_now, model_policy
from app.services.nowcast import nowcast_out, nowcast_point
from app.services.segments import check_segment
from app.services.window_curves import WindowCurves

PARKED_LISTED = 20


def _model(session: Session, name: str) -> MonitoredModel:
    model = ModelRepository(session).get_by_name(name)
    if model is None:
        raise ModelNotFoundError(name)
    return model


def check_metric(metric: str) -> str:
    """The metric name if the registry knows it; 422 listing the valid names otherwise."""
    if metric not in METRIC_NAMES:
        raise PayloadValidationError(
            f"unknown metric {metric!r}; valid: {', '.join(METRIC_NAMES)}",
            details=[{"field": "metric", "message": f"must be one of {', '.join(METRIC_NAMES)}"}],
            extra={"valid_metrics": list(METRIC_NAMES)},
        )
    return metric


def _interval(low: float | None, high: float | None) -> Interval | None:
    return (low, high) if low is not None and high is not None else None


def _measured(value: SeriesValue | WindowMetricValue | None) -> dict[str, Any]:
    """A stored metric value as the API's :class:`MetricValues` fields; all null for None (the
    window's values are withheld, or the metric was not computed)."""
    if value is None:
        return dict.fromkeys(MetricValues.model_fields)
    return {
        "regular": value.regular,
        "calibrated": value.calibrated,
        "regular_ci": _interval(value.regular_ci_low, value.regular_ci_high),
        "calibrated_ci": _interval(value.calibrated_ci_low, value.calibrated_ci_high),
        "prior_effect": value.prior_effect,
        "performance_effect": value.performance_effect,
    }


def metric_series(
    session: Session,
    name: str,
    *,
    metric: str,
    segment: str,
    start: datetime | None,
    end: datetime | None,
    also: Sequence[str] = (),
) -> MetricSeries:
    """One metric of one segment over [start, end), oldest window first, and the ``also``
    metrics over the same windows: the windows, the maturity rule and pi0 are read once, and
    every metric's values in one query."""
    model = _model(session, name)
    metrics = list(dict.fromkeys([check_metric(metric), *map(check_metric, also)]))
    check_segment(session, model, segment)
    repo = WindowMetricsRepository(session)
    rows = repo.segment_rows(model.id, segment, start, end)
    values = {
        (v.metric, v.window_start): v
        for v in repo.metrics_of(model.id, segment, metrics, [r.window_start for r in rows])
    }
    current = Pi0Repository(session).current(model.id)
    maturity = maturity_now(session, model)

    def series(of: str) -> list[MetricPoint]:
        return [_point(row, values.get((of, row.window_start)), of, maturity) for row in rows]

    points = series(metric)
    return MetricSeries(
        model=model.name,
        metric=metric,
        segment=segment,
        pi0=current.value if current is not None else None,
        pi0_version=current.version if current is not None else None,
        points=points,
        also={other: series(other) for other in metrics if other != metric},
    )


def withheld(row: WindowMetrics, maturity: MaturityRule) -> str:
    """Why an immature window's measured values are not shown: they rest on the labels that
    came first (chargebacks before anything else, feedback on alerts only), so a few early frauds
    would read as pi = 1.0 and AP = 1.0. The waiting reason is the rule's at the model's clock
    now (the stored verdict's was written at the window's last computation)."""
    labels = WindowLabels(row.window_start, row.labelled, row.positives, row.label_coverage)
    waiting = maturity.immaturity(labels) or "waiting for labels"
    return (
        f"{waiting}: measured values are withheld until the window's labels are complete; "
        "`early` estimates what they will show"
    )


def _point(
    row: WindowMetrics, value: SeriesValue | None, metric: str, maturity: MaturityRule
) -> MetricPoint:
    # An immature window shows its counts but none of its measured values (see withheld).
    shown = value if row.mature else None
    if not row.mature:
        reason: str | None = withheld(row, maturity)
    else:
        reason = value.undefined_reason if value is not None else "not computed"
        if row.verdict == "insufficient_data" and reason is None:
            reason = row.verdict_reason
    return MetricPoint(
        window_start=row.window_start,
        n=row.labelled,
        rows_total=row.rows_total,
        positives=row.positives,
        pi=row.pi if row.mature else None,
        pi0=row.pi0,
        label_coverage=row.label_coverage,
        **_measured(shown),
        verdict=cast(Verdict, row.verdict),
        judged=row.judged_at is not None,
        mature=row.mature,
        reason=reason,
        nowcast=nowcast_point(row.nowcast, metric),
        early=early_point(row.early, metric),
    )


def window_detail(
    session: Session, name: str, window_start: datetime, segment: str
) -> WindowDetail:
    """Every metric of one window segment and its regular and calibrated PR curves."""
    model = _model(session, name)
    check_segment(session, model, segment)
    repo = WindowMetricsRepository(session)
    row = repo.window(model.id, window_start, segment)
    if row is None:
        raise NotFoundError(
            f"no computed window {window_start.isoformat()} (segment {segment!r}) for {name!r}",
            extra={"model": name, "window_start": window_start.isoformat(), "segment": segment},
        )
    values = repo.metric_values(model.id, segment, None, [row.window_start])
    hidden = None if row.mature else withheld(row, maturity_now(session, model))
    metrics = {
        v.metric: WindowMetricOut(
            **_measured(v if hidden is None else None),
            reason=v.undefined_reason if hidden is None else hidden,
        )
        for v in values
    }
    curves = WindowCurves.of(row.sketch if hidden is None else None, row.pi0)
    result: dict[str, Any] = row.result or {}
    return WindowDetail(
        model=model.name,
        window_start=row.window_start,
        segment=row.segment,
        segments=repo.segments(model.id, row.window_start),
        rows_total=row.rows_total,
        n=row.labelled,
        positives=row.positives,
        negatives=row.negatives,
        pi=row.pi if hidden is None else None,
        pi0=row.pi0,
        pi0_version=row.pi0_version,
        label_coverage=row.label_coverage,
        mature=row.mature,
        threshold=row.threshold,
        verdict=cast(Verdict, row.verdict),
        verdict_reason=row.verdict_reason,
        judged_at=row.judged_at,
        evidence=EvidenceOut.model_validate(row.evidence) if row.evidence else None,
        nowcast=nowcast_out(row.nowcast),
        early=early_out(row.early),
        computed_at=row.computed_at,
        duration_seconds=row.duration_seconds,
        counts=result.get("counts") if hidden is None else None,
        metrics=metrics,
        curves=curves.pr,
        roc=curves.roc,
        pr_gain=curves.pr_gain,
    )


def _version_out(v: Any) -> Pi0VersionOut:
    return Pi0VersionOut.model_validate(v, from_attributes=True)


def pi0_info(session: Session, name: str) -> Pi0Out:
    """The model's current pi0, its versions, and the window counts the policy draws on."""
    model = _model(session, name)
    repo = WindowMetricsRepository(session)
    policy = model_policy(model, maturity_now(session, model))
    history = repo.history(model.id, "all")
    used = {w.window_start for w in usable_windows(policy, history)}
    versions = Pi0Repository(session).versions(model.id)
    return Pi0Out(
        model=model.name,
        policy=model.pi0_policy,
        tolerance=model.pi0_tolerance,
        current=_version_out(versions[-1]) if versions else None,
        candidate=estimate_pi0(policy, history).value,
        versions=[_version_out(v) for v in versions],
        history=[
            Pi0HistoryPoint(
                window_start=w.window_start,
                labelled=w.labelled,
                positives=w.positives,
                pi=w.positives / w.labelled if w.labelled else None,
                label_coverage=w.label_coverage,
                used=policy.name != "fixed" and w.window_start in used,
            )
            for w in history
        ],
    )


def status(session: Session, name: str) -> StatusOut:
    """Latest complete window, what waits in the queue, and the workers' heartbeats."""
    model = _model(session, name)
    queue = WindowQueueRepository(session).state(model.id)
    repo = WindowMetricsRepository(session)
    latest = (
        repo.window(model.id, queue.latest_complete_window, "all")
        if queue.latest_complete_window is not None
        else None
    )
    lag = (
        # Ingest stamps a window's update by the database's clock (ingest.request_time).
        max((database_now(session) - queue.oldest_dirty_update).total_seconds(), 0.0)
        if queue.oldest_dirty_update is not None
        else 0.0
    )
    return StatusOut(
        model=model.name,
        latest_complete_window=queue.latest_complete_window,
        latest_computed_at=latest.computed_at if latest is not None else None,
        windows=queue.windows,
        dirty_windows=queue.dirty_windows,
        failing_windows=queue.failing_windows,
        parked_windows=queue.parked_windows,
        parked=[
            ParkedWindowOut(window_start=w.window_start, attempts=w.attempts, error=w.error)
            for w in WindowQueueRepository(session).parked(model.id, PARKED_LISTED)
        ],
        oldest_dirty_update=queue.oldest_dirty_update,
        worker_lag_seconds=lag,
        workers=[
            WorkerOut(
                worker_id=h.worker_id,
                started_at=h.started_at,
                last_seen_at=h.last_seen_at,
                stopped_at=h.stopped_at,
                windows_computed=h.windows_computed,
                failures=h.failures,
                last_duration_seconds=h.last_duration_seconds,
            )
            for h in HeartbeatRepository(session).recent()
        ],
    )
