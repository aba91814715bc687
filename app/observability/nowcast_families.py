"""Prometheus gauges of the label-free estimates (the nowcast), per (model, segment), for the
newest window that has one: usually the newest window, whose labels have not arrived.

Read from ``window_metrics.nowcast`` at scrape time, like every domain gauge (see
app/observability/collector.py); an undefined value is not exported.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client.core import Metric

from app.db.repositories.scrape_rows import LatestEstimate
from app.metrics import EXPECTED_METRICS
from app.observability.estimate_gauges import (
    estimate_gauge,
    finite_number,
    positive_ratio_gauges,
    put,
)


def _smallest(*values: Any) -> float | None:
    defined = [v for v in (finite_number(value) for value in values) if v is not None]
    return min(defined) if defined else None


def nowcast_families(nowcasts: Sequence[LatestEstimate]) -> Iterator[Metric]:
    """The nowcast's gauge families."""
    by_metric = ("metric",)
    pi, pi_low, pi_high = positive_ratio_gauges(
        "calmon_nowcast_positive_ratio",
        "Fraud rate of the newest estimated window, from its scores alone (labels not needed).",
    )
    value = estimate_gauge(
        "calmon_nowcast_metric_value",
        "Expected metric of the newest estimated window (regular, at its estimated fraud rate).",
        metric_labels=by_metric,
    )
    low = estimate_gauge(
        "calmon_nowcast_metric_ci_lower",
        "Lower bound of where the measured value should land (95%).",
        metric_labels=by_metric,
    )
    high = estimate_gauge(
        "calmon_nowcast_metric_ci_upper",
        "Upper bound of where the measured value should land (95%).",
        metric_labels=by_metric,
    )
    started = estimate_gauge(
        "calmon_nowcast_window_start_timestamp_seconds",
        "Start of the window the nowcast gauges describe (Unix time).",
    )
    shift = estimate_gauge(
        "calmon_nowcast_score_shift",
        "1 if that window's scores fit the reference's fraud and legitimate score "
        "distributions at no fraud rate (the model or its inputs changed), else 0.",
    )
    p_value = estimate_gauge(
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
            put(family, key, number)
        for metric in EXPECTED_METRICS:
            bounds = stored.get("expected_ci", {}).get(metric) or (None, None)
            for family, number in (
                (value, stored.get("expected", {}).get(metric)),
                (low, bounds[0]),
                (high, bounds[1]),
            ):
                put(family, [*key, metric], number)
    yield from (pi, pi_low, pi_high, value, low, high, started, shift, p_value)
