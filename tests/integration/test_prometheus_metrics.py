"""GET /metrics against a real database (both backends) and a real `calmon serve`.

The domain gauges are seeded straight into the worker's tables, so these tests pin the
collector's mapping (rows -> names, labels, values); the end-to-end test
(tests/e2e/test_prometheus_e2e.py) drives the same path through ingest and the worker.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import AlertStateRow, Pi0Version, WorkerHeartbeat
from app.db.tables import Window
from app.monitoring.vocabulary import ALERT_STATES, SIGNALS, VERDICTS
from app.observability.collector import CalmonCollector
from app.observability.prometheus import ScrapePage
from tests.support.api import AuthHeaders
from tests.support.nowcasts import stored_example
from tests.support.promql import PROMETHEUS_BUILTINS, documented_metric_names, metric_names
from tests.support.server import LiveServer
from tests.support.shipped_config import dashboard_promql, rule_expressions
from tests.support.tools import require_tool, run_tool
from tests.support.worker_data import new_model
from tests.support.worker_output import EARLY, add_metric_value, add_window_metrics


def newest_window(now: datetime) -> datetime:
    """The seed's newest computed window: yesterday (UTC midnight)."""
    return now.replace(hour=0, minute=0, second=0) - timedelta(days=1)


# Counters that appear once a model's batch was counted (the seed posts none).
IN_PROCESS_COUNTERS = (
    "calmon_ingested_rows_total",
    "calmon_rejected_rows_total",
    "calmon_rejected_batches_total",
)
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
# Nowcasts of the seed's two windows: the newest one's legitimate scores moved.
STEADY = stored_example(pi=0.05)
SHIFTED = stored_example(pi=0.05, legit_shift=0.3)


def seed(factory: sessionmaker[Session]) -> datetime:
    """Two windows of one model (the newest must win), a dirty window, pi0, two workers, and
    the alert state: paging on the older (judged) window while the newest awaits labels.

    Times are relative to now (returned), read when the test runs, not when it was collected.
    A second model's newest window is mature: its pi is exported (fraud's newest is not).
    """
    now = datetime.now(UTC).replace(microsecond=0)
    newest = newest_window(now)
    with factory.begin() as session:
        settled = new_model(session, name="settled", threshold=0.5)
        add_window_metrics(session, settled.id, newest, counts=(1_000, 1_000, 5))
        model = new_model(session, threshold=0.5, alert_floor=0.3)
        for start, verdict, calibrated, labelled, nowcast in (
            (newest - timedelta(days=1), "performance_drop", 0.6, 9_000, STEADY),
            (newest, "insufficient_data", 0.25, 90, SHIFTED),
        ):
            window = add_window_metrics(
                session,
                model.id,
                start,
                counts=(10_000, labelled, 40),
                pi0=0.004,
                pi0_version=1,
                verdict=verdict,
                judged_at=now if verdict != "insufficient_data" else None,
                nowcast=nowcast,
                nowcast_reference_version=1,
                early=EARLY if verdict == "insufficient_data" else None,
                computed_at=now - timedelta(minutes=5),
                duration_seconds=0.2,
            )
            add_metric_value(
                session,
                window,
                "average_precision",
                regular=calibrated + 0.05,
                regular_ci_low=calibrated,
                regular_ci_high=calibrated + 0.1,
                calibrated=calibrated,
                calibrated_ci_low=calibrated - 0.05,
                calibrated_ci_high=calibrated + 0.05,
                prior_effect=0.05,
                performance_effect=calibrated - 0.6,
            )
            # Undefined (no predicted positive): must be absent, never NaN or 0.
            add_metric_value(
                session, window, "precision", undefined_reason="nothing predicted positive"
            )
        session.add(
            AlertStateRow(
                model_id=model.id,
                segment="all",
                reference_version=1,
                state="drop",
                signals="cusum",
                drop_statistic=12.5,
                threshold=10.0,
                evidence_windows=20,
                last_window=newest - timedelta(days=1),
                episode_start=newest - timedelta(days=3),
                reference_value=0.55,
                updated_at=now,
            )
        )
        session.add(
            Pi0Version(
                model_id=model.id,
                version=1,
                value=0.004,
                policy="historical",
                windows_used=30,
                rows_used=300_000,
                positives_used=1_200,
            )
        )
        session.add(
            Window(
                model_id=model.id,
                window_start=now.replace(hour=0, minute=0, second=0),
                dirty_version=3,
                computed_version=2,
                updated_at=now - timedelta(minutes=2),
            )
        )
        for worker, seen, computed, failures in (
            ("w-alive", now - timedelta(seconds=10), 7, 1),
            ("w-gone", now - timedelta(days=1), 5, 0),
        ):
            session.add(
                WorkerHeartbeat(
                    worker_id=worker,
                    started_at=now - timedelta(days=2),
                    last_seen_at=seen,
                    windows_computed=computed,
                    failures=failures,
                )
            )
    return now


def samples(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def test_collector_exports_the_newest_window(
    client: TestClient, session_factory: sessionmaker[Session]
) -> None:
    now = seed(session_factory)
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found = samples(response.text)
    series = {"model": "fraud", "segment": "all"}
    ap = {**series, "metric": "average_precision"}
    # The metric gauges describe the newest *mature* window: the newest one (1% labelled) has
    # measured values resting on its first labels, which are never exported.
    mature = (newest_window(now) - timedelta(days=1)).timestamp()
    assert value(found, "calmon_window_metric_window_start_timestamp_seconds", **series) == mature
    assert value(found, "calmon_window_metric_value", **ap, variant="calibrated") == 0.6
    assert value(
        found, "calmon_window_metric_ci_lower", **ap, variant="calibrated"
    ) == pytest.approx(0.55)
    assert value(found, "calmon_window_metric_ci_upper", **ap, variant="regular") == pytest.approx(
        0.7
    )
    assert value(found, "calmon_window_performance_effect", **ap) == pytest.approx(0.0)
    assert value(found, "calmon_window_prior_effect", **ap) == 0.05
    assert ("calmon_window_positive_ratio", tuple(sorted(series.items()))) not in found
    # ...and its early estimate is exported as one, beside the continued statistic.
    assert value(found, "calmon_early_positive_ratio", **series) == 0.0041
    assert value(found, "calmon_early_positive_ratio_ci_upper", **series) == 0.006
    early_ap = {**ap, "variant": "calibrated"}
    assert value(found, "calmon_early_metric_value", **early_ap) == 0.33
    assert value(found, "calmon_early_alert_precision_ratio", **series) == 0.1
    assert value(found, "calmon_early_fraud_labels", **series) == 31
    assert value(found, "calmon_alert_early_drop_evidence", **series) == 0.0
    # Enumerations are StateSets: one metric, the state as a label named like the metric.
    for verdict in VERDICTS:
        expected = 1.0 if verdict == "insufficient_data" else 0.0
        assert value(found, "calmon_window_verdict", **series, calmon_window_verdict=verdict) == (
            expected
        )
        judged = 1.0 if verdict == "performance_drop" else 0.0
        assert value(found, "calmon_alert_verdict", **series, calmon_alert_verdict=verdict) == (
            judged
        )
    for state in ALERT_STATES:
        expected = 1.0 if state == "drop" else 0.0
        assert value(found, "calmon_alert_state", **series, calmon_alert_state=state) == expected
    for signal in SIGNALS:
        expected = 1.0 if signal == "cusum" else 0.0
        assert value(found, "calmon_alert_signal", **series, calmon_alert_signal=signal) == (
            expected
        )
    # The alert state rests on the newest *mature* window, not on the newest window.
    assert (
        value(found, "calmon_alert_window_start_timestamp_seconds", **series)
        == (newest_window(now) - timedelta(days=1)).timestamp()
    )
    assert value(found, "calmon_alert_drop_evidence", **series) == 12.5
    assert value(found, "calmon_alert_drop_threshold", **series) == 10.0
    assert value(found, "calmon_reference_metric_value", **ap) == 0.55
    assert value(found, "calmon_windows_awaiting_labels", **series) == 1
    assert value(found, "calmon_rows_awaiting_labels", **series) == 10_000
    assert (
        value(found, "calmon_window_start_timestamp_seconds", **series)
        == newest_window(now).timestamp()
    )
    assert value(found, "calmon_window_label_coverage_ratio", **series) == 0.009
    assert value(found, "calmon_window_positives", **series) == 40
    assert value(found, "calmon_reference_positive_ratio", model="fraud") == 0.004
    assert (
        value(found, "calmon_model_alert_floor", model="fraud", metric="average_precision") == 0.3
    )
    assert value(found, "calmon_model_window_duration_seconds", model="fraud") == 86400
    # The undefined precision is absent, in every variant and bound.
    assert not [
        key
        for key in found
        if ("metric", "precision") in key[1] and key[0].startswith("calmon_window_")
    ]
    # The nowcast gauges describe the newest estimated window, as stored.
    assert value(found, "calmon_nowcast_window_start_timestamp_seconds", **series) == (
        newest_window(now).timestamp()
    )
    assert value(found, "calmon_nowcast_score_shift", **series) == 1
    assert value(found, "calmon_nowcast_fit_p_value", **series) == SHIFTED["fit_p_value"] < 1e-3
    assert value(found, "calmon_nowcast_positive_ratio", **series) == SHIFTED["pi"]
    low, high = SHIFTED["pi_ci"]
    assert value(found, "calmon_nowcast_positive_ratio_ci_lower", **series) == low
    assert value(found, "calmon_nowcast_positive_ratio_ci_upper", **series) == high
    for metric in ("precision", "f1", "average_precision"):
        at = {**series, "metric": metric}
        expected = SHIFTED["expected"][metric]
        assert value(found, "calmon_nowcast_metric_value", **at) == expected
        low, high = SHIFTED["expected_ci"][metric]
        assert value(found, "calmon_nowcast_metric_ci_lower", **at) == low <= expected
        assert value(found, "calmon_nowcast_metric_ci_upper", **at) == high >= expected
    assert value(found, "calmon_dirty_windows") == 1
    assert 100 <= value(found, "calmon_worker_lag_seconds") < 600
    assert value(found, "calmon_workers_alive") == 1
    assert value(found, "calmon_worker_windows_computed_total") == 12
    assert value(found, "calmon_worker_failures_total") == 1
    last_seen = value(found, "calmon_worker_last_seen_timestamp_seconds")
    assert last_seen == (now - timedelta(seconds=10)).timestamp()


def test_exported_names_are_the_documented_ones(
    client: TestClient, session_factory: sessionmaker[Session], auth_headers: AuthHeaders
) -> None:
    """With data and traffic, the exported names are exactly the documented ones."""
    now = seed(session_factory)
    rows = [
        {"id": f"r{i}", "timestamp": now.isoformat(), "score": 0.5, "label": 0} for i in range(3)
    ]
    ingest = auth_headers("ingest")
    assert (
        client.post(
            "/v1/models/fraud/batches", json={"batch_id": "b1", "rows": rows}, headers=ingest
        ).status_code
        == 201
    )
    bad = [{**rows[0], "id": "bad", "score": "high"}]
    assert (
        client.post(
            "/v1/models/fraud/batches", json={"batch_id": "b2", "rows": bad}, headers=ingest
        ).status_code
        == 422
    )
    text = client.get("/metrics").text
    found = samples(text)
    assert value(found, "calmon_ingested_rows_total", model="fraud") == 3
    assert value(found, "calmon_rejected_rows_total", model="fraud") == 1
    assert value(found, "calmon_rejected_batches_total", model="fraud") == 1
    names = {name for name, _ in found}
    derived = {"_created", "_bucket", "_count", "_sum"}  # prometheus_client's extra series
    exported = {name for name in names if not any(name.endswith(s) for s in derived)}
    exported |= {"calmon_http_request_duration_seconds"}
    assert exported == documented_metric_names()


def test_dashboard_and_rules_select_scraped_names(
    client: TestClient, session_factory: sessionmaker[Session]
) -> None:
    """What Grafana and the alert rules query is in a real scrape (not only in the docs)."""
    seed(session_factory)
    client.get("/healthz")
    scraped = {name for name, _ in samples(client.get("/metrics").text)}
    allowed = scraped | PROMETHEUS_BUILTINS | set(IN_PROCESS_COUNTERS)
    queries = [expr for _, expr in dashboard_promql()] + [expr for _, expr in rule_expressions()]
    for expr in queries:
        assert metric_names(expr) <= allowed, expr


def test_latency_is_labelled_by_templated_route(client: TestClient) -> None:
    client.get("/v1/models/some-model")  # 401 without a token, still a routed request
    client.get("/no/such/path")
    found = samples(client.get("/metrics").text)
    routes = {
        dict(labels)["route"]
        for (name, labels) in found
        if name == "calmon_http_request_duration_seconds_count"
    }
    assert "/v1/models/{name}" in routes
    assert "unmatched" in routes
    assert not any("some-model" in route for route in routes)


def test_the_page_is_cached_for_the_ttl(session_factory: sessionmaker[Session]) -> None:
    clock = [0.0]
    registry = CollectorRegistry()
    registry.register(
        CalmonCollector(lambda: session_factory, lease_seconds=300, max_series=100_000)
    )
    page = ScrapePage(registry, ttl_seconds=5, clock=lambda: clock[0])

    def verdicts() -> dict[str, str]:
        return {
            dict(labels)["model"]: dict(labels)["calmon_window_verdict"]
            for (name, labels), value in samples(page.text().decode()).items()
            if name == "calmon_window_verdict" and value
        }

    assert verdicts() == {}
    seed(session_factory)
    clock[0] = 4.9
    assert verdicts() == {}
    clock[0] = 5.0
    assert verdicts() == {"fraud": "insufficient_data", "settled": "stable"}


def test_real_scrape_passes_promtool(
    live_server: LiveServer, session_factory: sessionmaker[Session]
) -> None:
    """`promtool check metrics` (Prometheus' own linter) on a scrape of a real `calmon serve`."""
    promtool = require_tool("promtool")
    seed(session_factory)
    httpx.get(f"{live_server.base_url}/healthz")
    text = httpx.get(f"{live_server.base_url}/metrics").text
    assert "calmon_window_metric_value{" in text
    result = run_tool(promtool, "check", "metrics", stdin=text)
    assert result.returncode == 0, result.stdout + result.stderr
