"""Which metric to trust: every metric's imbalance sensitivity over the ratio, and one metric's
surface at the model's ratio with the model's windows on it."""

from __future__ import annotations

import math
from datetime import datetime

from sqlalchemy.orm import Session

from app.db.repositories.window_metrics import WindowMetricsRepository
from app.errors import PayloadValidationError
from app.metrics.sensitivity import SURFACE_METRICS
from app.metrics.trust import ratio_grid, sensitivity_curves, surface_at
from app.schemas.trust import OperatingPointOut, SensitivityCurveOut, SurfaceOut, TrustOut
from app.services.models import get_model
from app.services.periods import load_period


def metric_trust(
    session: Session,
    name: str,
    *,
    metric: str,
    segment: str,
    period: tuple[datetime | None, datetime | None],
) -> TrustOut:
    """s(r) of every contingency-space metric, ``metric``'s surface at the period's ratio, and
    each mature window's (TNR, TPR) at the threshold."""
    if metric not in SURFACE_METRICS:
        raise PayloadValidationError(
            f"unknown metric {metric!r}; choose from {', '.join(SURFACE_METRICS)}",
            details=[{"field": "metric", "message": f"unknown metric {metric!r}"}],
        )
    model = get_model(session, name)
    pooled = load_period(session, model, segment, *period)
    pi = pooled.pooled_pi
    if not 0.0 < pi < 1.0:
        raise PayloadValidationError(
            f"the period's fraud rate is {pi}: it has no imbalance ratio",
            details=[{"field": "period", "message": "needs frauds and legitimate rows"}],
        )
    ratio = (1.0 - pi) / pi
    pi0 = pooled.pi0 if pooled.pi0 is not None else pi
    ratios = ratio_grid(ratio)
    surface = surface_at(metric, ratio, pi0)
    starts = [w.window_start for w in pooled.windows]
    repository = WindowMetricsRepository(session)
    rates = {
        wanted: {
            v.window_start: v.regular
            for v in repository.metric_values(model.id, segment, wanted, starts)
        }
        for wanted in ("recall", "fpr")
    }
    windows = [
        OperatingPointOut(window_start=start, tnr=1.0 - fpr, tpr=tpr)
        for start in starts
        if (tpr := rates["recall"].get(start)) is not None
        and (fpr := rates["fpr"].get(start)) is not None
    ]
    return TrustOut(
        model=model.name,
        segment=segment,
        pi=pi,
        ratio=ratio,
        pi0=pi0,
        ratios=ratios.tolist(),
        curves=[
            SensitivityCurveOut(metric=c.metric, sensitivity=c.sensitivity.tolist())
            for c in sensitivity_curves(ratios, pi0)
        ],
        surface=SurfaceOut(
            metric=metric,
            centres=surface.tnr[0].tolist(),
            values=[[None if math.isnan(v) else v for v in row] for row in surface.values.tolist()],
        ),
        windows=windows,
    )
