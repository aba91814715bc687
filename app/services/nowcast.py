"""The stored label-free estimates (``window_metrics.nowcast``) as the API shows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.metrics import EXPECTED_METRICS
from app.metrics.types import Interval
from app.schemas.metrics import (
    DispersionOut,
    FitOut,
    NowcastOut,
    NowcastPoint,
    NowcastValue,
    RecentFitOut,
)


def _interval(pair: Sequence[float] | None) -> Interval | None:
    return (float(pair[0]), float(pair[1])) if pair is not None else None


def nowcast_out(stored: Mapping[str, Any] | None) -> NowcastOut | None:
    """A window's whole nowcast."""
    if stored is None:
        return None
    if "unavailable" in stored:
        return NowcastOut(
            reference_version=stored["reference_version"], reason=stored["unavailable"]
        )
    undefined: Mapping[str, str] = stored.get("undefined", {})
    return NowcastOut(
        reference_version=stored["reference_version"],
        rows=stored["rows"],
        flagged=stored["flagged"],
        pi=stored["pi"],
        pi_ci=_interval(stored["pi_ci"]),
        adjusted_count=stored["adjusted_count"],
        adjusted_count_ci=_interval(stored["adjusted_count_ci"]),
        expected={
            name: NowcastValue(
                value=stored["expected"].get(name),
                ci=_interval(stored["expected_ci"].get(name)),
                reason=undefined.get(name),
            )
            for name in EXPECTED_METRICS
        },
        fit=FitOut.model_validate(stored["fit"]),
        fit_p_value=stored["fit_p_value"],
        recent_fit=(
            RecentFitOut.model_validate(stored["recent_fit"]) if stored.get("recent_fit") else None
        ),
        recent_fit_p_value=stored.get("recent_fit_p_value"),
        dispersion=(
            DispersionOut.model_validate(stored["dispersion"]) if stored.get("dispersion") else None
        ),
        score_shift=stored["score_shift"],
    )


def nowcast_point(stored: Mapping[str, Any] | None, metric: str) -> NowcastPoint | None:
    """One metric's estimate in a series point."""
    whole = nowcast_out(stored)
    if whole is None:
        return None
    expected = whole.expected.get(metric)
    if whole.reason is not None:
        reason: str | None = whole.reason
    elif expected is None:
        reason = f"{metric} is not estimated without labels (only {', '.join(EXPECTED_METRICS)})"
    else:
        reason = expected.reason
    return NowcastPoint(
        reference_version=whole.reference_version,
        pi=whole.pi,
        pi_ci=whole.pi_ci,
        value=expected.value if expected is not None else None,
        ci=expected.ci if expected is not None else None,
        score_shift=whole.score_shift,
        fit_p_value=whole.fit_p_value,
        recent_fit_p_value=whole.recent_fit_p_value,
        reason=reason,
    )
