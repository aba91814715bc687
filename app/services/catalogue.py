"""The metric catalogue: every metric, and how much the model's own fraud rate moves it."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

from sqlalchemy.orm import Session

from app.errors import PayloadValidationError
from app.metrics.catalogue import (
    REFERENCE_METRICS,
    Sensitivity,
    reference_sensitivities,
    registry_sensitivities,
)
from app.metrics.registry import METRICS_BY_NAME
from app.metrics.whatif import at_prior
from app.schemas.catalogue import CatalogueEntry, CatalogueOut, SensitivityOut, SwingOut
from app.services.models import get_model
from app.services.periods import Period, load_period


def _swings(period: Period) -> tuple[tuple[float, float] | None, dict[str, SwingOut]]:
    """Each registry metric on the pooled curve at the lowest and highest fraud rate of the
    period's windows. A rate of 0 or 1 (a mature window whose rows were all frauds, which a
    fraud-only feed can produce) has no curve to read: that side is None."""
    lo, hi = min(period.pis), max(period.pis)
    low, high = (at_prior(period.sketch, p) if 0.0 < p < 1.0 else None for p in (lo, hi))
    swings = {
        name: SwingOut(
            at_pi_lo=low.calibrated[name] if low is not None else None,
            at_pi_hi=high.calibrated[name] if high is not None else None,
        )
        for name in METRICS_BY_NAME
    }
    return (lo, hi), swings


def _sensitivity(s: Sensitivity) -> SensitivityOut:
    return SensitivityOut(regular=s.regular, calibrated=s.calibrated, reason=s.reason)


def catalogue(
    session: Session,
    name: str,
    *,
    segment: str,
    start: datetime | None,
    end: datetime | None,
    pi: float | None,
) -> CatalogueOut:
    """Every registry metric (and the seed paper's reference metrics) with its imbalance
    sensitivity at the model's class ratio (the period's fraud rate, or ``pi``)."""
    model = get_model(session, name)
    period = load_period(session, model, segment, start, end)
    ratio_pi = pi if pi is not None else period.pooled_pi
    if not 0.0 < ratio_pi < 1.0:
        raise PayloadValidationError(
            f"pi must lie strictly between 0 and 1, got {ratio_pi}",
            details=[{"field": "pi", "message": "must lie in (0, 1)"}],
        )
    pi0 = period.pi0 if period.pi0 is not None else period.pooled_pi
    ratio = (1.0 - ratio_pi) / ratio_pi
    span, swings = _swings(period)
    entries = []
    for s in registry_sensitivities(ratio, pi0):
        spec = METRICS_BY_NAME[s.name]
        entries.append(
            CatalogueEntry(
                **asdict(spec),
                in_registry=True,
                sensitivity=_sensitivity(s),
                swing=swings.get(spec.name),
            )
        )
    for s in reference_sensitivities(ratio):
        signed = s.name in ("tss", "hss", "youden")
        entries.append(
            CatalogueEntry(
                name=s.name,
                label=REFERENCE_METRICS[s.name],
                lo=-1.0 if signed else 0.0,
                hi=1.0,
                higher_is_better=True,
                prior_invariant=s.name in ("tss", "youden"),
                in_registry=False,
                sensitivity=_sensitivity(s),
                swing=None,
            )
        )
    return CatalogueOut(
        model=model.name, pi=ratio_pi, ratio=ratio, pi0=pi0, range=span, metrics=entries
    )
