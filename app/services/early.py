"""The stored early estimates (``window_metrics.early``) as the API shows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from app.metrics.early_estimate import ESTIMATED
from app.metrics.types import Interval
from app.schemas.early import (
    EarlyEvidenceOut,
    EarlyOut,
    EarlyPoint,
    EstimatedValue,
    FeedbackPrecisionOut,
    LabelsSoFar,
    ScoresOnlyOut,
)

# The series metric each early estimate stands for, and whether it is its regular or
# calibrated value (precision and recall at the threshold are the window's own; AP is at pi0).
SERIES_METRICS: dict[str, Literal["regular", "calibrated"]] = {
    "precision": "regular",
    "recall": "regular",
    "average_precision": "calibrated",
}


def _interval(pair: Sequence[float] | None) -> Interval | None:
    return (float(pair[0]), float(pair[1])) if pair is not None else None


def _value(stored: Mapping[str, Any], name: str) -> EstimatedValue:
    undefined: Mapping[str, str] = stored.get("undefined") or {}
    reason = undefined.get(name) or (stored.get("reason") if stored.get(name) is None else None)
    return EstimatedValue(
        value=stored.get(name), ci=_interval(stored.get(f"{name}_ci")), reason=reason
    )


def early_out(stored: Mapping[str, Any] | None) -> EarlyOut | None:
    """A window's whole early estimate."""
    if stored is None:
        return None
    feedback = stored.get("alert_precision_feedback")
    evidence = stored.get("evidence")
    scores = stored.get("scores_only")
    return EarlyOut(
        as_of=datetime.fromisoformat(stored["as_of"]),
        look=stored["look"],
        reference_version=stored["reference_version"],
        pi0=stored.get("pi0"),
        labels_so_far=LabelsSoFar.model_validate(stored["labels_so_far"]),
        **{name: _value(stored, name) for name in ESTIMATED},
        bursts=stored.get("bursts"),
        alert_precision_feedback=(
            FeedbackPrecisionOut.model_validate(feedback) if feedback else None
        ),
        evidence=EarlyEvidenceOut.model_validate(evidence) if evidence else None,
        scores_only=ScoresOnlyOut.model_validate(scores) if scores else None,
        reason=stored.get("reason"),
    )


def early_point(stored: Mapping[str, Any] | None, metric: str) -> EarlyPoint | None:
    """One metric's early estimate in a series point."""
    whole = early_out(stored)
    if whole is None:
        return None
    variant = SERIES_METRICS.get(metric)
    estimated = getattr(whole, metric) if variant is not None else None
    if estimated is None:
        reason: str | None = (
            f"{metric} is not estimated before the labels are complete "
            f"(only {', '.join(SERIES_METRICS)} and the fraud rate)"
        )
    else:
        reason = estimated.reason
    return EarlyPoint(
        as_of=whole.as_of,
        look=whole.look,
        variant=variant,
        value=estimated.value if estimated is not None else None,
        ci=estimated.ci if estimated is not None else None,
        pi=whole.pi.value,
        pi_ci=whole.pi.ci,
        reason=reason,
    )
