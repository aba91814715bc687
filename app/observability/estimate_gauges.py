"""What the early estimates' and the nowcast's gauge families share: both describe the newest
estimated window per (model, segment), a fraud rate with its 95% interval, and export a value
only when it is a finite number (an undefined estimate is left out, not exported as NaN)."""

from __future__ import annotations

import math
from typing import Any

from prometheus_client.core import GaugeMetricFamily

ESTIMATE_LABELS = ("model", "segment")

IntervalFamilies = tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]


def estimate_gauge(
    name: str, documentation: str, *, metric_labels: tuple[str, ...] = ()
) -> GaugeMetricFamily:
    """A gauge per (model, segment), and per metric when ``metric_labels`` name it."""
    return GaugeMetricFamily(name, documentation, labels=[*ESTIMATE_LABELS, *metric_labels])


def positive_ratio_gauges(name: str, documentation: str) -> IntervalFamilies:
    """The estimated fraud rate ``name`` and the bounds of its 95% interval."""
    return (
        estimate_gauge(name, documentation),
        estimate_gauge(f"{name}_ci_lower", "Lower bound of its 95% interval."),
        estimate_gauge(f"{name}_ci_upper", "Upper bound of its 95% interval."),
    )


def finite_number(value: Any) -> float | None:
    """``value`` as a float if it is a finite number, else None."""
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def put(family: GaugeMetricFamily, labels: list[str], number: Any) -> None:
    """Export ``number`` if it is a finite number (an undefined value is not exported)."""
    if (defined := finite_number(number)) is not None:
        family.add_metric(labels, defined)
