"""Which threshold to set now (``GET /v1/models/{name}/threshold-advice``).

The model's rates come from the segment's frozen reference (its pooled curve sketch), the fraud
rate now from the newest window that says something about it: an early estimate or a nowcast of
a window newer than every mature one, else the newest mature window's labelled rows. The
arithmetic is app.metrics.threshold_advice; no raw row is read.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
from sqlalchemy.orm import Session

from app.db.metrics_tables import SegmentReference, WindowMetrics
from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.db.tables import MonitoredModel
from app.metrics import CurveSketch, InvalidInputError
from app.metrics.threshold_advice import Expected, Situation, advise, dispersion, rates_at
from app.metrics.types import Float64Array
from app.monitoring.early_views import wilson
from app.schemas.advice import (
    ExpectedAt,
    FraudRateNow,
    ReferenceUsed,
    ThresholdAdviceOut,
)
from app.services.models import get_model
from app.services.segments import check_segment

ADVICE_SEED = 0
"""The advice's bootstrap seed: the same data gives the same advice."""
RECENT_WINDOWS = 7
"""Windows whose median row count is a window's expected size."""


def threshold_advice(session: Session, name: str, segment: str) -> ThresholdAdviceOut:
    """The thresholds to set at the fraud rate now (see the module docstring)."""
    model = get_model(session, name)
    check_segment(session, model, segment)
    monitoring = MonitoringRepository(session)
    spec = monitoring.current_spec(model.id)
    frozen = monitoring.segment_references(model.id, spec.version).get(segment) if spec else None
    empty = ThresholdAdviceOut(
        model=model.name,
        segment=segment,
        threshold=model.threshold,
        alert_capacity=model.alert_capacity,
    )
    if frozen is None:
        reason = "the segment has no frozen reference yet: its curve is what the advice reads"
        return empty.model_copy(update={"reason": reason})
    sketch = CurveSketch.from_bytes(frozen.sketch)
    if sketch.positives == 0 or sketch.negatives == 0:
        return empty.model_copy(update={"reason": "the reference lacks frauds or legitimate rows"})
    repo = WindowMetricsRepository(session)
    rows = repo.segment_rows(model.id, segment)
    in_reference = [r for r in rows if frozen.first_window <= r.window_start <= frozen.last_window]
    fraud_spread = dispersion(np.array([float(r.positives) for r in in_reference]))
    now = fraud_rate_now(rows, fraud_spread)
    if now is None:
        return empty.model_copy(update={"reason": "no window says what the fraud rate is now"})
    caught = _caught_frauds(repo, model, segment, in_reference)
    reference = _reference_used(frozen, sketch, model.threshold)
    situation = Situation(
        pi=now.value,
        pi_interval=now.ci,
        rows=statistics.median(r.rows_total for r in rows[-RECENT_WINDOWS:]),
        threshold=model.threshold,
        capacity=model.alert_capacity,
        target_precision=reference.precision,
        fraud_dispersion=dispersion(caught),
    )
    try:
        advice = advise(sketch, situation, seed=ADVICE_SEED)
    except InvalidInputError as exc:  # a reference too small to bootstrap
        return empty.model_copy(update={"reason": str(exc)})
    return empty.model_copy(
        update={
            "fraud_rate": now,
            "rows_per_window": situation.rows,
            "fraud_dispersion": situation.fraud_dispersion,
            "reference": reference,
            "current": _out(advice.current),
            "within_capacity": _out(advice.within_capacity),
            "within_capacity_reason": advice.capacity_reason,
            "restoring_precision": _out(advice.restoring_precision),
            "restoring_precision_reason": advice.precision_reason,
        }
    )


def fraud_rate_now(rows: Sequence[WindowMetrics], fraud_spread: float) -> FraudRateNow | None:
    """The newest word on the fraud rate: an early estimate, else a nowcast, of a window newer
    than every mature one; else the newest mature window's labelled rows (a Wilson interval on
    its rows over ``fraud_spread``, the frauds' dispersion: bursts make them vary more)."""
    mature = [r for r in rows if r.mature and 0 < r.positives < r.labelled]
    newest_mature = mature[-1] if mature else None
    newer = [
        r for r in rows if newest_mature is None or r.window_start > newest_mature.window_start
    ]
    for source, column in (("early", "early"), ("nowcast", "nowcast")):
        for row in reversed(newer):
            stored = getattr(row, column)
            pi = stored.get("pi") if stored else None
            if pi is not None and 0.0 < pi < 1.0:
                ci = stored.get("pi_ci")
                return FraudRateNow(
                    value=pi,
                    ci=(float(ci[0]), float(ci[1])) if ci else None,
                    source=source,
                    window_start=row.window_start,
                )
    if newest_mature is None:
        return None
    return FraudRateNow(
        value=newest_mature.positives / newest_mature.labelled,
        ci=wilson(newest_mature.positives, newest_mature.labelled / fraud_spread),
        source="measured",
        window_start=newest_mature.window_start,
    )


def _caught_frauds(
    repo: WindowMetricsRepository,
    model: MonitoredModel,
    segment: str,
    windows: Sequence[WindowMetrics],
) -> Float64Array:
    """The reference windows' frauds at or above the threshold (recall times frauds)."""
    starts = [w.window_start for w in windows]
    values = repo.metric_values(model.id, segment, "recall", starts)
    recall = {v.window_start: v.regular for v in values if v.regular is not None}
    caught = [
        round(recall[w.window_start] * w.positives) for w in windows if w.window_start in recall
    ]
    return np.array(caught, dtype=np.float64)


def _reference_used(
    frozen: SegmentReference, sketch: CurveSketch, threshold: float
) -> ReferenceUsed:
    pi = sketch.positives / sketch.n
    tpr, fpr = rates_at(sketch, threshold)
    flagged = pi * tpr + (1.0 - pi) * fpr
    return ReferenceUsed(
        version=frozen.version,
        first_window=frozen.first_window,
        last_window=frozen.last_window,
        pi=pi,
        precision=pi * tpr / flagged if flagged > 0 else None,
    )


def _out(expected: Expected | None) -> ExpectedAt | None:
    return None if expected is None else ExpectedAt.model_validate(asdict(expected))


def summary(advice: ThresholdAdviceOut) -> list[str]:
    """The advice in a few lines (``calmon advice``)."""
    head = f"{advice.model} ({advice.segment}), threshold {advice.threshold:.4g}"
    if advice.reason is not None or advice.fraud_rate is None:
        return [head, f"  no advice: {advice.reason}"]
    rate = advice.fraud_rate
    lines = [
        head,
        f"  fraud rate now {rate.value:.4%} ({rate.source}, window {rate.window_start:%Y-%m-%d}), "
        f"{advice.rows_per_window:,.0f} rows a window",
    ]
    for label, expected, reason in (
        ("now", advice.current, None),
        ("within capacity", advice.within_capacity, advice.within_capacity_reason),
        ("restoring precision", advice.restoring_precision, advice.restoring_precision_reason),
    ):
        if expected is None:
            lines.append(f"  {label}: none ({reason})")
            continue
        precision = "-" if expected.precision is None else f"{expected.precision:.3f}"
        low, high = expected.alerts_interval
        money = (
            ""
            if expected.value_recall is None
            else f", fraud amount caught {expected.value_recall:.1%}"
        )
        lines.append(
            f"  {label}: threshold {expected.threshold:.4g}, precision {precision}, "
            f"recall {expected.recall:.3f}{money}, alerts {expected.alerts:.0f} "
            f"(one window: {low:.0f} to {high:.0f})"
        )
    return lines
