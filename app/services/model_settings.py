"""A model row's monitoring settings as the domain's plain value objects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import cast
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from app.db.metrics_tables import ReferenceSpec as ReferenceSpecRow
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import MonitoredModel
from app.monitoring.maturity import MaturityRule
from app.monitoring.pi0 import Pi0Policy
from app.monitoring.reference import ReferenceRule, ReferenceSpec
from app.monitoring.vocabulary import WINDOW_LENGTH, Granularity, Pi0PolicyName, ReferenceKind


def local_midnight(day: date | None, timezone: str) -> datetime | None:
    """The instant a day starts in ``timezone`` (window starts are compared with it)."""
    return None if day is None else datetime.combine(day, time(0), ZoneInfo(timezone))


def _day_after(day: date | None, timezone: str) -> datetime | None:
    return local_midnight(day + timedelta(days=1), timezone) if day is not None else None


def maturity_rule(model: MonitoredModel, clock: datetime | None) -> MaturityRule:
    """How the model's windows mature (app/monitoring/maturity.py), at the model's ``clock``
    (the newest event it received: WindowQueueRepository.model_clock)."""
    horizon = model.label_horizon_days
    return MaturityRule(
        min_label_coverage=model.min_label_coverage,
        horizon=timedelta(days=horizon) if horizon is not None else None,
        clock=clock,
        window_length=WINDOW_LENGTH[cast(Granularity, model.granularity)],
    )


def maturity_now(session: Session, model: MonitoredModel) -> MaturityRule:
    """How the model's windows mature at its clock as stored now (the read side's view; the
    worker decides a window's ``mature`` flag with the same rule)."""
    return maturity_rule(model, WindowQueueRepository(session).model_clock(model.id))


def model_policy(model: MonitoredModel, maturity: MaturityRule) -> Pi0Policy:
    """The model's pi0 policy, from its mature windows; reference dates are inclusive days in
    the model's time zone."""
    return Pi0Policy(
        name=cast(Pi0PolicyName, model.pi0_policy),
        lookback_windows=model.pi0_lookback_windows,
        reference_start=local_midnight(model.pi0_reference_start, model.timezone),
        reference_end=_day_after(model.pi0_reference_end, model.timezone),
        fixed=model.pi0_fixed,
        mature=maturity.is_mature,
    )


def reference_spec(model: MonitoredModel, row: ReferenceSpecRow) -> ReferenceSpec:
    """A stored reference version; its dates are inclusive days in the model's time zone."""
    return ReferenceSpec(
        version=row.version,
        kind=cast(ReferenceKind, row.kind),
        start=local_midnight(row.start_date, model.timezone),
        end=_day_after(row.end_date, model.timezone),
        as_of=row.as_of,
    )


@dataclass(frozen=True)
class MonitorSettings:
    """What the detector reads of a model."""

    rule: ReferenceRule
    detection_drop: float
    alert_floor: float | None

    @property
    def maturity(self) -> MaturityRule:
        """How the model's windows mature."""
        return self.rule.maturity


def monitor_settings(model: MonitoredModel, maturity: MaturityRule) -> MonitorSettings:
    """The model's reference rule, detector tuning and alert floor."""
    return MonitorSettings(
        rule=ReferenceRule(
            windows=model.reference_windows,
            min_positives=model.reference_min_positives,
            maturity=maturity,
        ),
        detection_drop=model.detection_drop,
        alert_floor=model.alert_floor,
    )
