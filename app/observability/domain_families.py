"""The domain gauges' metric families, built from a scrape's reads (docs/interfaces.md section 3):
alerts, models, the service, the newest windows' values; an undefined value is not exported."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TypeGuard

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    StateSetMetricFamily,
)

from app.db.repositories import scrape_rows
from app.metrics import METRIC_NAMES
from app.monitoring.vocabulary import ALERT_STATES, SIGNALS, VERDICTS, signals_of
from app.observability.early_families import early_families
from app.observability.nowcast_families import nowcast_families
from app.observability.series_budget import Budget
from app.observability.snapshot import ALERT_FLOOR_METRIC, WINDOW_SECONDS, Detail, Snapshot


def _defined(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


def core_families(snapshot: Snapshot) -> Iterator[Metric]:
    """The families every scrape exports: alerts, models, the service."""
    yield from _model_families(snapshot.models)
    yield from _alert_families(snapshot.alerts)
    yield from _awaiting_families(snapshot.awaiting)
    yield from _service_families(snapshot)


def detail_families(detail: Detail) -> Iterator[Metric]:
    """The newest windows' families of one ``detail`` read."""
    yield from _value_families(detail.values)
    yield from _window_families(detail.windows)
    yield from nowcast_families(detail.nowcasts)
    yield from early_families(detail.early)


def _value_families(values: Sequence[scrape_rows.LatestValue]) -> Iterator[Metric]:
    by_variant = ["model", "segment", "metric", "variant"]
    value = GaugeMetricFamily(
        "calmon_window_metric_value",
        "Metric of the newest mature window (labels complete), regular (measured) or "
        "calibrated to the reference prior.",
        labels=by_variant,
    )
    lower = GaugeMetricFamily(
        "calmon_window_metric_ci_lower",
        "Lower bound of the 95% bootstrap interval.",
        labels=by_variant,
    )
    upper = GaugeMetricFamily(
        "calmon_window_metric_ci_upper",
        "Upper bound of the 95% bootstrap interval.",
        labels=by_variant,
    )
    prior = GaugeMetricFamily(
        "calmon_window_prior_effect",
        "Change against the segment's reference explained by the positive ratio (pi).",
        labels=["model", "segment", "metric"],
    )
    performance = GaugeMetricFamily(
        "calmon_window_performance_effect",
        "Change of the calibrated metric against the segment's reference (model quality).",
        labels=["model", "segment", "metric"],
    )
    started = GaugeMetricFamily(
        "calmon_window_metric_window_start_timestamp_seconds",
        "Start of the newest mature window, which the metric gauges describe (Unix time).",
        labels=["model", "segment"],
    )
    known = set(METRIC_NAMES)
    described: set[tuple[str, str]] = set()
    for row in values:
        stored = row.value
        if (row.model, row.segment) not in described:
            described.add((row.model, row.segment))
            started.add_metric([row.model, row.segment], stored.window_start.timestamp())
        if stored.metric not in known:  # a metric dropped from the registry: not exported
            continue
        key = [row.model, row.segment, stored.metric]
        for variant, point, low, high in (
            ("regular", stored.regular, stored.regular_ci_low, stored.regular_ci_high),
            ("calibrated", stored.calibrated, stored.calibrated_ci_low, stored.calibrated_ci_high),
        ):
            for family, number in ((value, point), (lower, low), (upper, high)):
                if _defined(number):
                    family.add_metric([*key, variant], float(number))
        effects = ((prior, stored.prior_effect), (performance, stored.performance_effect))
        for family, number in effects:
            if _defined(number):
                family.add_metric(key, float(number))
    yield from (value, lower, upper, prior, performance, started)


def _window_families(windows: Sequence[scrape_rows.LatestWindow]) -> Iterator[Metric]:
    labels = ["model", "segment"]

    def gauge(name: str, documentation: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, documentation, labels=labels)

    pi = gauge(
        "calmon_window_positive_ratio",
        "Positive ratio pi of the newest window, once its labels are complete (mature).",
    )
    coverage = gauge(
        "calmon_window_label_coverage_ratio", "Share of the newest window's rows with a label."
    )
    labelled = gauge("calmon_window_labelled_rows", "Labelled rows in the newest window.")
    positives = gauge("calmon_window_positives", "Labelled positives in the newest window.")
    started = gauge(
        "calmon_window_start_timestamp_seconds", "Start of the newest window (Unix time)."
    )
    computed = gauge(
        "calmon_window_computed_timestamp_seconds",
        "When the newest window's metrics were computed (Unix time).",
    )
    verdict = StateSetMetricFamily(
        "calmon_window_verdict",
        "Verdict of the newest window (insufficient_data until it is mature and judged).",
        labels=labels,
    )
    for window in windows:
        key = [window.model, window.segment]
        for family, number in (
            (pi, window.pi if window.mature else None),
            (coverage, window.label_coverage),
            (labelled, window.labelled),
            (positives, window.positives),
            (started, window.window_start.timestamp()),
            (computed, window.computed_at.timestamp()),
        ):
            if _defined(number):
                family.add_metric(key, float(number))
        verdict.add_metric(key, {v: window.verdict == v for v in VERDICTS})
    yield from (pi, coverage, labelled, positives, started, computed, verdict)


def _model_families(models: Sequence[scrape_rows.ModelState]) -> Iterator[Metric]:
    pi0 = GaugeMetricFamily(
        "calmon_reference_positive_ratio",
        "Reference prior pi0 every calibrated value of the model uses (newest version).",
        labels=["model"],
    )
    floor = GaugeMetricFamily(
        "calmon_model_alert_floor",
        "Per-model floor on a calibrated metric (the worker's floor signal compares with it).",
        labels=["model", "metric"],
    )
    duration = GaugeMetricFamily(
        "calmon_model_window_duration_seconds",
        "Length of the model's windows (its granularity).",
        labels=["model"],
    )
    for model in models:
        if _defined(model.pi0):
            pi0.add_metric([model.name], float(model.pi0))
        if _defined(model.alert_floor):
            floor.add_metric([model.name, ALERT_FLOOR_METRIC], float(model.alert_floor))
        if model.granularity in WINDOW_SECONDS:
            duration.add_metric([model.name], WINDOW_SECONDS[model.granularity])
    yield from (pi0, floor, duration)


def _alert_families(alerts: Sequence[scrape_rows.AlertRow]) -> Iterator[Metric]:
    labels = ["model", "segment"]
    state = StateSetMetricFamily(
        "calmon_alert_state",
        "Alert state of the (model, segment): warming_up (no reference yet), ok or drop.",
        labels=labels,
    )
    signal = StateSetMetricFamily(
        "calmon_alert_signal",
        "What holds the drop state: cusum (accumulated evidence against the reference), early "
        "(the same evidence continued through windows whose labels are still arriving) or "
        "floor (a mature window's calibrated AP interval wholly below the alert floor).",
        labels=labels,
    )
    verdict = StateSetMetricFamily(
        "calmon_alert_verdict",
        "Verdict of the newest mature (judged) window, which the alert state rests on.",
        labels=labels,
    )
    window = GaugeMetricFamily(
        "calmon_alert_window_start_timestamp_seconds",
        "Start of the newest judged window (Unix time).",
        labels=labels,
    )
    evidence = GaugeMetricFamily(
        "calmon_alert_drop_evidence",
        "The drop detector's statistic on the judged windows (log-likelihood ratio).",
        labels=labels,
    )
    early = GaugeMetricFamily(
        "calmon_alert_early_drop_evidence",
        "The same statistic continued through the windows whose labels are still arriving "
        "(their early evidence); pages above the threshold.",
        labels=labels,
    )
    threshold = GaugeMetricFamily(
        "calmon_alert_drop_threshold",
        "The drop detector's paging threshold for this (model, segment).",
        labels=labels,
    )
    reference = GaugeMetricFamily(
        "calmon_reference_metric_value",
        "The reference's calibrated value, at the current pi0.",
        labels=[*labels, "metric"],
    )
    for row in alerts:
        key = [row.model, row.segment]
        state.add_metric(key, {s: row.state == s for s in ALERT_STATES})
        held = set(signals_of(row.signals))
        signal.add_metric(key, {s: s in held for s in SIGNALS})
        evidence.add_metric(key, row.drop_statistic)
        early.add_metric(key, row.early_statistic)
        if row.last_window is not None and row.verdict is not None:
            verdict.add_metric(key, {v: row.verdict == v for v in VERDICTS})
            window.add_metric(key, row.last_window.timestamp())
        if _defined(row.threshold):
            threshold.add_metric(key, float(row.threshold))
        if _defined(row.reference_value):
            reference.add_metric([*key, "average_precision"], float(row.reference_value))
    yield from (state, signal, verdict, window, evidence, early, threshold, reference)


def _awaiting_families(awaiting: Sequence[scrape_rows.AwaitingLabels]) -> Iterator[Metric]:
    waiting_windows = GaugeMetricFamily(
        "calmon_windows_awaiting_labels",
        "Windows whose labels are not complete enough to judge them yet.",
        labels=["model", "segment"],
    )
    waiting_rows = GaugeMetricFamily(
        "calmon_rows_awaiting_labels",
        "Rows in the windows awaiting labels.",
        labels=["model", "segment"],
    )
    for entry in awaiting:
        waiting_windows.add_metric([entry.model, entry.segment], float(entry.windows))
        waiting_rows.add_metric([entry.model, entry.segment], float(entry.rows))
    yield from (waiting_windows, waiting_rows)


def _service_families(snapshot: Snapshot) -> Iterator[Metric]:
    backlog, workers = snapshot.backlog, snapshot.workers
    lag = 0.0
    if backlog.dirty_windows and backlog.oldest_dirty_updated_at is not None:
        lag = max(0.0, (snapshot.taken_at - backlog.oldest_dirty_updated_at).total_seconds())
    yield GaugeMetricFamily(
        "calmon_dirty_windows", "Windows waiting for the worker.", value=backlog.dirty_windows
    )
    yield GaugeMetricFamily(
        "calmon_worker_lag_seconds",
        "How long the oldest dirty window has waited since its last update (0 when none).",
        value=lag,
    )
    yield CounterMetricFamily(
        "calmon_worker_windows_computed",
        "Windows computed by all workers (sum of their heartbeats).",
        value=workers.windows_computed,
    )
    yield CounterMetricFamily(
        "calmon_worker_failures",
        "Failed window computations of all workers (sum of their heartbeats).",
        value=workers.failures,
    )
    yield GaugeMetricFamily(
        "calmon_workers_alive",
        "Workers not stopped whose last heartbeat is at most two of their heartbeat intervals old.",
        value=workers.alive,
    )
    last_seen = GaugeMetricFamily(
        "calmon_worker_last_seen_timestamp_seconds", "Newest worker heartbeat (Unix time)."
    )
    if workers.last_seen_at is not None:
        last_seen.add_metric([], workers.last_seen_at.timestamp())
    yield last_seen


def budget_families(budget: Budget) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "calmon_metrics_series",
        "Series of calmon's domain gauges in this scrape (within CALMON_METRICS_MAX_SERIES).",
        value=budget.series,
    )
    dropped = GaugeMetricFamily(
        "calmon_metrics_detail_dropped",
        "1 for each tier of detail left out of this scrape to stay within "
        "CALMON_METRICS_MAX_SERIES (window_detail, segment_detail, intervals), else 0.",
        labels=["tier"],
    )
    for tier, out in budget.dropped.items():
        dropped.add_metric([tier], float(out))
    yield dropped
