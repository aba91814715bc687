"""A model row's monitoring settings as the worker's plain value objects."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import cast
from zoneinfo import ZoneInfo

from app.db.tables import MonitoredModel
from app.worker.gating import GateSettings
from app.worker.pi0 import Pi0Policy, Pi0PolicyName


def _local_midnight(day: date | None, timezone: str) -> datetime | None:
    return None if day is None else datetime.combine(day, time(0), ZoneInfo(timezone))


def model_policy(model: MonitoredModel) -> Pi0Policy:
    """The model's pi0 policy; reference dates are inclusive days in the model's time zone."""
    end = _local_midnight(model.pi0_reference_end, model.timezone)
    if end is not None:
        end = datetime.combine(
            date.fromordinal(end.date().toordinal() + 1), time(0), ZoneInfo(model.timezone)
        )
    return Pi0Policy(
        name=cast(Pi0PolicyName, model.pi0_policy),
        lookback_windows=model.pi0_lookback_windows,
        reference_start=_local_midnight(model.pi0_reference_start, model.timezone),
        reference_end=end,
        fixed=model.pi0_fixed,
        min_label_coverage=model.min_label_coverage,
    )


def gate_settings(model: MonitoredModel) -> GateSettings:
    """The thresholds that decide whether a window gets a verdict."""
    return GateSettings(
        min_positives=model.min_positives,
        min_label_coverage=model.min_label_coverage,
        baseline_windows=model.baseline_windows,
        min_history_windows=model.min_history_windows,
        min_history_positives=model.min_history_positives,
    )
