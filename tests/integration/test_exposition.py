"""/metrics is rendered in bulk (app.observability.exposition): byte for byte the text
prometheus_client's generate_latest writes, on calmon's own page and on awkward families."""

from __future__ import annotations

import math
from collections.abc import Iterable

from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
    StateSetMetricFamily,
    SummaryMetricFamily,
    UnknownMetricFamily,
)
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.samples import Timestamp
from sqlalchemy.orm import Session, sessionmaker

from app.observability.exposition import render
from bench.metrics_scrape import seed

AWKWARD_TEXTS = ["back\\slash", 'a "quote"', "line\nfeed", "", "façade ☃", "\\n literal", "a,b=c}"]
AWKWARD_NUMBERS = [
    0.0,
    -0.0,
    1,
    0.1,
    -2.5,
    5e-324,
    123456.5,
    1234567.0,
    1e22,
    -1e22,
    1.7e9,
    math.nan,
    math.inf,
    -math.inf,
]


class _Fixed(Collector):
    """A collector that hands out families built beforehand."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def _library_text(families: list[Metric]) -> bytes:
    registry = CollectorRegistry()
    registry.register(_Fixed(families))
    return generate_latest(registry)


def _awkward_families() -> list[Metric]:
    gauge = GaugeMetricFamily(
        "calmon_awkward", "help with \\ and\nline", labels=["model", "segment"]
    )
    for number, value in enumerate(AWKWARD_NUMBERS):
        gauge.add_metric([AWKWARD_TEXTS[number % len(AWKWARD_TEXTS)], str(number)], value)
    gauge.add_metric(["stamped", "float"], 1.0, timestamp=1_700_000_000.123)
    gauge.add_metric(["stamped", "object"], 2.0, timestamp=Timestamp(1_700_000_000, 5))
    counter = CounterMetricFamily("calmon_things", "Things.", labels=["kind"], created=1.5)
    counter.add_metric(["a"], 3.0, created=1_700_000_000.25)
    histogram = HistogramMetricFamily("calmon_latency", "Latency.", labels=["route"])
    histogram.add_metric(["/v1"], [("0.1", 1.0), ("1.0", 4.0), ("+Inf", 5.0)], sum_value=2.5)
    gauge_histogram = GaugeHistogramMetricFamily(
        "calmon_sizes", "Sizes.", buckets=[("1.0", 2.0), ("+Inf", 3.0)], gsum_value=4.0
    )
    summary = SummaryMetricFamily("calmon_summary", "S.", count_value=3, sum_value=1.5)
    info = InfoMetricFamily("calmon_build", "Build.", value={"version": 'v"1\\'})
    states = StateSetMetricFamily("calmon_state", "State.", labels=["model"])
    states.add_metric(['m"1'], {"ok": True, "warn": False})
    unknown = UnknownMetricFamily("calmon_unknown", "", value=7)
    odd_label = GaugeMetricFamily("calmon_odd_label", "", labels=["needs.escape"])
    odd_label.add_metric(["x"], 1.0)
    odd_name = GaugeMetricFamily("calmon.dotted", "A dotted name.", value=1.0)
    no_labels = GaugeMetricFamily("calmon_plain", "", value=0.5)
    # OpenMetrics-only samples out of order: the text format sorts them into families of their own.
    mixed = Metric("calmon_mixed", "Mixed.", "gaugehistogram")
    for suffix, value in (("_gsum", 1.0), ("_created", 2.0), ("_bucket", 3.0), ("_gcount", 4.0)):
        mixed.add_sample(
            "calmon_mixed" + suffix, {"le": "+Inf"} if suffix == "_bucket" else {}, value
        )
    return [
        gauge,
        counter,
        histogram,
        gauge_histogram,
        summary,
        info,
        states,
        unknown,
        odd_label,
        odd_name,
        no_labels,
        mixed,
    ]


def test_awkward_families_are_written_as_the_library_writes_them() -> None:
    families = _awkward_families()
    page = render(families)
    assert page == _library_text(families)
    # And Prometheus' own parser reads it back: the escapes are the format's.
    parsed = {family.name: family for family in text_string_to_metric_families(page.decode())}
    values = {s.labels["segment"]: s.labels["model"] for s in parsed["calmon_awkward"].samples}
    assert values["2"] == "line\nfeed"
    assert values["0"] == "back\\slash"


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=12),
            st.text(max_size=12),
            st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**60), 2**60),
        ),
        max_size=20,
    )
)
def test_any_label_values_and_numbers_are_written_as_the_library_writes_them(
    samples: list[tuple[str, str, float]],
) -> None:
    gauge = GaugeMetricFamily("calmon_any", "Any.", labels=["model", "segment"])
    for model, segment, value in samples:
        gauge.add_metric([model, segment], value)
    assert render([gauge]) == _library_text([gauge])


def test_calmon_page_is_written_as_the_library_writes_it(
    client: TestClient, session_factory: sessionmaker[Session]
) -> None:
    with session_factory.begin() as session:
        seed(session, models=3, segments=3)
    assert client.get("/healthz").status_code == 200  # the service's counters hold a request
    registry: CollectorRegistry = client.app.state.metrics_registry  # type: ignore[attr-defined]
    families = list(registry.collect())  # once: the page's clock-based gauges move
    series = sum(len(family.samples) for family in families)
    assert series > 400, series  # the windows' values, intervals, nowcasts, alerts
    assert render(families) == _library_text(families)
