"""Prometheus gauges of the label-free estimates (the nowcast), per (model, segment), for the
newest window that has one: usually the newest window, whose labels have not arrived.

Read from ``window_metrics.nowcast`` at scrape time, like every domain gauge (see
app/observability/collector.py); an undefined value is not exported.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from app.db.repositories.scrape_rows import LatestEstimate
from app.metrics import EXPECTED_METRICS


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _smallest(*values: Any) -> float | None:
    defined = [v for v in (_number(value) for value in values) if v is not None]
    return min(defined) if defined else None


def nowcast_families(nowcasts: Sequence[LatestEstimate]) -> Iterator[Metric]:
    """The nowcast's gauge families."""
    labels = ["model", "segment"]

    def gauge(name: str, documentation: str, *, by_metric: bool = False) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            name, documentation, labels=[*labels, "metric"] if by_metric else labels
        )

    pi = gauge(
        "calmon_nowcast_positive_ratio",
        "Fraud rate of the newest estimated window, from its scores alone (labels not needed).",
    )
    pi_low = gauge("calmon_nowcast_positive_ratio_ci_lower", "Lower bound of its 95% interval.")
    pi_high = gauge("calmon_nowcast_positive_ratio_ci_upper", "Upper bound of its 95% interval.")
    value = gauge(
        "calmon_nowcast_metric_value",
        "Expected metric of the newest estimated window (regular, at its estimated fraud rate).",
        by_metric=True,
    )
    low = gauge(
        "calmon_nowcast_metric_ci_lower",
        "Lower bound of where the measured value should land (95%).",
        by_metric=True,
    )
    high = gauge(
        "calmon_nowcast_metric_ci_upper",
        "Upper bound of where the measured value should land (95%).",
        by_metric=True,
    )
    started = gauge(
        "calmon_nowcast_window_start_timestamp_seconds",
        "Start of the window the nowcast gauges describe (Unix time).",
    )
    shift = gauge(
        "calmon_nowcast_score_shift",
        "1 if that window's scores fit the reference's fraud and legitimate score "
        "distributions at no fraud rate (the model or its inputs changed), else 0.",
    )
    p_value = gauge(
        "calmon_nowcast_fit_p_value",
        "The smallest p-value of the score-shift tests (the window alone, and with the windows "
        "before it).",
    )
    for row in nowcasts:
        stored = row.estimate
        if "unavailable" in stored:
            continue
        key = [row.model, row.segment]
        started.add_metric(key, row.window_start.timestamp())
        shift.add_metric(key, 1.0 if stored.get("score_shift") else 0.0)
        interval = stored.get("pi_ci") or (None, None)
        for family, number in (
            (pi, stored.get("pi")),
            (pi_low, interval[0]),
            (pi_high, interval[1]),
            (p_value, _smallest(stored.get("fit_p_value"), stored.get("recent_fit_p_value"))),
        ):
            if (defined := _number(number)) is not None:
                family.add_metric(key, defined)
        for metric in EXPECTED_METRICS:
            bounds = stored.get("expected_ci", {}).get(metric) or (None, None)
            for family, number in (
                (value, stored.get("expected", {}).get(metric)),
                (low, bounds[0]),
                (high, bounds[1]),
            ):
                if (defined := _number(number)) is not None:
                    family.add_metric([*key, metric], defined)
    yield from (pi, pi_low, pi_high, value, low, high, started, shift, p_value)
