"""A (model, segment)'s alert state to and from its ``alert_states`` row (the detector's
pass, app/windows/judging.py, reads one and writes the other)."""

from __future__ import annotations

from typing import Any, cast

from app.db.metrics_tables import AlertStateRow
from app.db.types import utcnow
from app.monitoring.alerts import EarlyContinuation, SegmentAlert
from app.monitoring.detector import DetectorState
from app.monitoring.vocabulary import AlertState, signals_of, stored_signals


def alert_of(row: AlertStateRow | None, segment: str, version: int) -> SegmentAlert:
    """The stored alert state, or a fresh one when the reference version moved on."""
    if row is None or row.reference_version != version:
        return SegmentAlert.fresh(segment, version, "no judged window yet")
    return SegmentAlert(
        segment=segment,
        reference_version=row.reference_version,
        state=cast(AlertState, row.state),
        signals=signals_of(row.signals),
        detector=DetectorState(
            drop=row.drop_statistic,
            gain=row.gain_statistic,
            paging=row.paging,
            gaining=row.gaining,
            windows=row.evidence_windows,
        ),
        threshold=row.threshold,
        last_window=row.last_window,
        episode_start=row.episode_start,
        reference_value=row.reference_value,
        reason=row.judged_reason if row.judged_reason is not None else row.reason,
        judged_reason=row.judged_reason,
        early=EarlyContinuation(
            DetectorState(drop=row.early_statistic, paging=row.early_paging),
            row.early_windows,
            row.early_as_of,
        ),
    )


def alert_row(model_id: int, alert: SegmentAlert) -> dict[str, Any]:
    """The ``alert_states`` row of ``alert``."""
    return {
        "model_id": model_id,
        "segment": alert.segment,
        "reference_version": alert.reference_version,
        "state": alert.state,
        "signals": stored_signals(alert.signals),
        "drop_statistic": alert.detector.drop,
        "gain_statistic": alert.detector.gain,
        "paging": alert.detector.paging,
        "gaining": alert.detector.gaining,
        "threshold": alert.threshold,
        "evidence_windows": alert.detector.windows,
        "last_window": alert.last_window,
        "episode_start": alert.episode_start,
        "reference_value": alert.reference_value,
        "reason": alert.reason,
        "judged_reason": alert.judged_reason,
        "early_statistic": alert.early.detector.drop if alert.early else 0.0,
        "early_paging": alert.early.detector.paging if alert.early else False,
        "early_windows": alert.early.windows if alert.early else 0,
        "early_as_of": alert.early.as_of if alert.early else None,
        "updated_at": utcnow(),
    }
