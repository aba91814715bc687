"""/metrics for many teams: a scrape token, one rendering for many scrapers, a series budget."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric, StateSetMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from pydantic import SecretStr

from app.api.app import create_app
from app.observability.prometheus import ScrapePage
from app.observability.series_budget import Budget, merged, series_count, split_intervals
from app.settings import Settings

SEGMENTS = ("all", "web", "store")


def _family(name: str, segments: tuple[str, ...], states: int = 0) -> Metric:
    labels = ["model", "segment"]
    keys = [[model, segment] for model in ("a", "b") for segment in segments]
    if states:
        state_set = StateSetMetricFamily(name, "", labels=labels)
        for key in keys:
            state_set.add_metric(key, {f"s{k}": k == 0 for k in range(states)})
        return state_set
    gauge = GaugeMetricFamily(name, "", labels=labels)
    for key in keys:
        gauge.add_metric(key, 0.5)
    return gauge


@pytest.mark.parametrize(
    ("budget", "dropped", "exported"),
    [
        (100, [], 12 + 2 + 4 + 2 + 4),
        (20, ["intervals"], 12 + 2 + 4),
        (16, ["segment_detail", "intervals"], 12 + 2),
        (13, ["window_detail", "segment_detail", "intervals"], 12),
        (5, ["window_detail", "segment_detail", "intervals"], 12),
    ],
)
def test_the_budget_drops_intervals_then_segments_then_windows_never_alerts(
    budget: int, dropped: list[str], exported: int
) -> None:
    plan = Budget(budget)
    plan.always([_family("calmon_alert_state", SEGMENTS, states=2)])  # 12 series
    window_all = [
        _family("calmon_window_metric_value", ("all",)),
        _family("calmon_window_metric_ci_lower", ("all",)),
    ]
    plain, intervals = split_intervals(window_all)
    if plan.offer("window_detail", plain) and plan.may_fit("segment_detail", 4):
        others, more = split_intervals(
            [
                _family("calmon_window_metric_value", ("web", "store")),
                _family("calmon_window_metric_ci_lower", ("web", "store")),
            ]
        )
        if plan.offer("segment_detail", others):
            plan.offer("intervals", intervals + more)
    assert [tier for tier, out in plan.dropped.items() if out] == dropped
    assert plan.series == series_count(plan.kept) == exported
    families = merged(plan.kept)
    assert len({m.name for m in families}) == len(families)  # one HELP/TYPE per name


class _SlowCollector(Collector):
    """Counts its collections and takes a while, as a large database read does."""

    def __init__(self) -> None:
        self.calls = 0

    def collect(self) -> Iterable[Metric]:
        self.calls += 1
        time.sleep(0.3)
        yield GaugeMetricFamily("calmon_dirty_windows", "", value=self.calls)


def test_scrapers_arriving_together_share_one_rendering() -> None:
    registry = CollectorRegistry()
    collector = _SlowCollector()
    registry.register(collector)
    clock = [0.0]
    page = ScrapePage(registry, ttl_seconds=5, clock=lambda: clock[0])
    pages: list[bytes] = []
    threads = [threading.Thread(target=lambda: pages.append(page.text())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (collector.calls, page.renderings, len(set(pages))) == (1, 1, 1)
    clock[0] = 5.0
    page.text()
    assert collector.calls == 2


@pytest.fixture
def guarded(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings.model_copy(update={"metrics_token": SecretStr("s3cret-scrape")}))
    with TestClient(app) as client:
        yield client


@pytest.mark.parametrize(
    ("header", "invalid"),
    [(None, False), ("Bearer wrong", True), ("Bearer s3cret-scrap", True), ("s3cret-scrape", True)],
)
def test_a_scrape_token_guards_metrics(
    guarded: TestClient, header: str | None, invalid: bool
) -> None:
    headers = {"Authorization": header} if header is not None else {}
    refused = guarded.get("/metrics", headers=headers)
    assert refused.status_code == 401, refused.text
    assert ('error="invalid_token"' in refused.headers["www-authenticate"]) is invalid
    assert "calmon_" not in refused.text.replace("CALMON_METRICS_TOKEN", "")


def test_the_scrape_token_opens_metrics(guarded: TestClient) -> None:
    served = guarded.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"})
    assert served.status_code == 200, served.text
    names = {family.name for family in text_string_to_metric_families(served.text)}
    assert {"calmon_metrics_series", "calmon_alert_state"} <= names
    assert guarded.get("/healthz").status_code == 200  # the probes stay open


def test_without_a_token_setting_metrics_stays_open(client: TestClient) -> None:
    assert client.get("/metrics").status_code == 200
