"""Prometheus gauges of the early estimates, per (model, segment), for the newest window that
has one: what that window's complete labels are expected to show, from its labels so far.

Read from ``window_metrics.early`` at scrape time, like every domain gauge (see
app/observability/collector.py); an undefined value is not exported. Every gauge here is an
estimate (its name says ``early``), never a measured value.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from app.db.repositories.scrape_rows import LatestEstimate
from app.observability.estimate_gauges import estimate_gauge, positive_ratio_gauges, put
from app.services.early import SERIES_METRICS


def early_families(estimates: Sequence[LatestEstimate]) -> Iterator[Metric]:
    """The early estimates' gauge families."""
    by_metric = ("metric", "variant")
    pi, pi_low, pi_high = positive_ratio_gauges(
        "calmon_early_positive_ratio",
        "Fraud rate the newest estimated window's complete labels are expected to show.",
    )
    value = estimate_gauge(
        "calmon_early_metric_value",
        "Metric the newest estimated window's complete labels are expected to show "
        "(precision, recall at the threshold: regular; average_precision: calibrated at pi0).",
        metric_labels=by_metric,
    )
    low = estimate_gauge(
        "calmon_early_metric_ci_lower", "Lower bound of its 95% interval.", metric_labels=by_metric
    )
    high = estimate_gauge(
        "calmon_early_metric_ci_upper", "Upper bound of its 95% interval.", metric_labels=by_metric
    )
    alerts = estimate_gauge(
        "calmon_early_alert_precision_ratio",
        "Confirmed frauds among the alerts investigators reviewed (feedback), that window.",
    )
    alerts_low = estimate_gauge("calmon_early_alert_precision_ci_lower", "Wilson 95% lower bound.")
    alerts_high = estimate_gauge("calmon_early_alert_precision_ci_upper", "Wilson 95% upper bound.")
    frauds = estimate_gauge("calmon_early_fraud_labels", "Fraud labels that window has so far.")
    started = estimate_gauge(
        "calmon_early_window_start_timestamp_seconds",
        "Start of the window the early gauges describe (Unix time).",
    )
    look = estimate_gauge(
        "calmon_early_look_timestamp_seconds",
        "The look the estimate was made at: labels that arrived by then count (Unix time).",
    )
    for row in estimates:
        stored = row.estimate
        key = [row.model, row.segment]
        started.add_metric(key, row.window_start.timestamp())
        if isinstance(stored.get("as_of"), str):
            look.add_metric(key, datetime.fromisoformat(stored["as_of"]).timestamp())
        feedback = stored.get("alert_precision_feedback") or {}
        for family, number in (
            (frauds, (stored.get("labels_so_far") or {}).get("frauds")),
            *_with_interval((pi, pi_low, pi_high), stored.get("pi"), stored.get("pi_ci")),
            *_with_interval(
                (alerts, alerts_low, alerts_high), feedback.get("value"), feedback.get("ci")
            ),
        ):
            put(family, key, number)
        for metric, variant in SERIES_METRICS.items():
            for family, number in _with_interval(
                (value, low, high), stored.get(metric), stored.get(f"{metric}_ci")
            ):
                put(family, [*key, metric, variant], number)
    yield from (pi, pi_low, pi_high, value, low, high, alerts, alerts_low, alerts_high)
    yield from (frauds, started, look)


def _with_interval(
    families: tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily],
    value: Any,
    interval: Any,
) -> tuple[tuple[GaugeMetricFamily, Any], ...]:
    """A value and its interval's bounds, each with its family."""
    low, high = (
        interval if isinstance(interval, list | tuple) and len(interval) == 2 else (None, None)
    )
    return ((families[0], value), (families[1], low), (families[2], high))
