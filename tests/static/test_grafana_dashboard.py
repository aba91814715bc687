"""The provisioned Grafana dashboard only asks for things calmon has.

Every panel's data source is provisioned (by uid and type), every PromQL expression selects a
metric calmon exports (docs/interfaces.md section 3), and every SQL query references tables and
columns of the SQLAlchemy metadata; on PostgreSQL the queries also run against that schema.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.orm import Session

from app.db.schema import metadata
from app.monitoring.vocabulary import ALERT_STATES, VERDICTS
from tests.support.databases import postgres_base_url
from tests.support.promql import documented_metric_names, exportable_names, metric_names
from tests.support.shipped_config import (
    POSTGRES_TYPE,
    PROMETHEUS_TYPE,
    dashboard_promql,
    dashboard_queries,
    dashboard_sql,
    load_dashboard,
)
from tests.support.tools import REPO_ROOT
from tests.support.worker_data import new_model
from tests.support.worker_output import add_metric_value, add_window_metrics

PROVISIONING = REPO_ROOT / "config" / "grafana" / "provisioning"
HISTOGRAMS = {"calmon_http_request_duration_seconds"}

SQL_KEYWORDS = frozenset(
    {"select", "distinct", "as", "from", "join", "inner", "left", "on", "where", "and", "or"}
    | {"not", "in", "is", "null", "order", "by", "asc", "desc", "group", "limit", "between"}
    | {"float8"}  # the type of a cast (``(wm.nowcast->>'pi')::float8``), not an identifier
    | {"case", "when", "then", "end"}  # a value shown only for mature (or immature) windows
)


def _provisioned() -> dict[str, str]:
    """uid -> type of every provisioned data source."""
    sources: dict[str, str] = {}
    for path in sorted((PROVISIONING / "datasources").glob("*.yml")):
        for source in yaml.safe_load(path.read_text())["datasources"]:
            sources[source["uid"]] = source["type"]
    return sources


def sql_references(sql: str) -> tuple[set[tuple[str, str]], set[str]]:
    """Return the (table, column) pairs a query references, and any unqualified identifiers.

    The dashboard's convention makes this checkable without a SQL parser: every table gets an
    alias (``FROM window_metrics wm``) and every column is written ``alias.column``.
    """
    body = re.sub(r"'[^']*'", "''", sql)  # literals, including '$model'
    body = re.sub(r'"[^"]*"', '""', body)  # output column names
    body = body.replace("$__timeFilter", "")
    aliases = {
        alias: table
        for table, alias in re.findall(r"\b(?:FROM|JOIN)\s+(\w+)\s+(\w+)", body, re.IGNORECASE)
    }
    pairs = {
        (aliases.get(alias, f"<unknown alias {alias}>"), column)
        for alias, column in re.findall(r"\b(\w+)\.(\w+)\b", body)
    }
    body = re.sub(r"\b\w+\.\w+\b", " ", body)
    bare = {
        token
        for token in re.findall(r"\b[A-Za-z_]\w*\b", body)
        if token.lower() not in SQL_KEYWORDS
        and token not in aliases
        and token not in aliases.values()
    }
    return pairs, bare


def test_dashboard_is_well_formed() -> None:
    dashboard = load_dashboard()
    assert dashboard["uid"] == "calmon-overview"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"], panel["title"]


def _cells(panel: dict[str, Any]) -> set[tuple[int, int]]:
    grid = panel["gridPos"]
    return {
        (x, y)
        for x in range(grid["x"], grid["x"] + grid["w"])
        for y in range(grid["y"], grid["y"] + grid["h"])
    }


def test_panels_do_not_overlap_and_follow_the_layout() -> None:
    """No two panels share a grid cell, and the panel list runs top to bottom (Grafana puts a
    panel under the row above it in the list, so the order is the rows' membership)."""
    panels = load_dashboard()["panels"]
    taken: dict[tuple[int, int], str] = {}
    for panel in panels:
        for cell in _cells(panel):
            assert cell not in taken, f"{panel['title']} overlaps {taken[cell]}"
            taken[cell] = panel["title"]
    positions = [(panel["gridPos"]["y"], panel["gridPos"]["x"]) for panel in panels]
    assert positions == sorted(positions)


def test_issue_panels_are_present() -> None:
    """The panels issue 5 asks for, by what their titles promise."""
    titles = " | ".join(panel["title"] for panel in load_dashboard()["panels"]).lower()
    for wanted in (
        "average precision: regular vs calibrated",
        "f1: regular vs calibrated",
        "pi vs pi0",
        "prior effect + performance effect",
        "verdict per window",
        "label coverage",
        "service health",
        "alerts",
    ):
        assert wanted in titles, wanted


def _panel(title: str) -> dict[str, Any]:
    panels: list[dict[str, Any]] = load_dashboard()["panels"]
    (panel,) = (panel for panel in panels if panel["title"] == title)
    return panel


def _mapped_texts(panel: dict[str, Any]) -> set[str]:
    return {
        option["text"].lower()
        for mapping in panel["fieldConfig"]["defaults"]["mappings"]
        for option in mapping["options"].values()
    }


def test_mappings_cover_the_vocabulary() -> None:
    """Every verdict and alert state has a mapping, so none shows as a bare value."""
    assert _mapped_texts(_panel("Verdict per window")) == set(VERDICTS)
    assert _mapped_texts(_panel("Alert state")) == set(ALERT_STATES)


NOWCAST_ROW = "Before the labels: nowcast"
NOWCAST_GAUGES = frozenset(
    {
        "calmon_nowcast_positive_ratio",
        "calmon_nowcast_positive_ratio_ci_lower",
        "calmon_nowcast_positive_ratio_ci_upper",
        "calmon_nowcast_metric_value",
        "calmon_nowcast_metric_ci_lower",
        "calmon_nowcast_metric_ci_upper",
        "calmon_nowcast_window_start_timestamp_seconds",
        "calmon_nowcast_score_shift",
        "calmon_nowcast_fit_p_value",
    }
)


def _row_panels(title_prefix: str) -> list[dict[str, Any]]:
    """The panels under the row whose title starts with ``title_prefix`` (up to the next row)."""
    panels: list[dict[str, Any]] = load_dashboard()["panels"]
    (start,) = (
        i
        for i, panel in enumerate(panels)
        if panel["type"] == "row" and panel["title"].startswith(title_prefix)
    )
    rest = panels[start + 1 :]
    end = next((i for i, panel in enumerate(rest) if panel["type"] == "row"), len(rest))
    return rest[:end]


def test_nowcast_row_shows_every_nowcast_gauge() -> None:
    """The row "Before the labels: nowcast": the estimated fraud rate beside the labelled one,
    the expected metrics, the score-shift flag, its window and the fit p-value, each gauge of
    the nowcast selected for the dashboard's model and segment."""
    panels = _row_panels(NOWCAST_ROW)
    titles = " | ".join(panel["title"] for panel in panels).lower()
    for wanted in ("estimated fraud rate", "expected precision", "score shift", "p-value"):
        assert wanted in titles, wanted
    selected: set[str] = set()
    for panel in panels:
        assert panel["datasource"]["type"] == PROMETHEUS_TYPE, panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            names = metric_names(expr)
            selected |= names
            if names - {"calmon_reference_positive_ratio"}:
                assert 'model="$model", segment="$segment"' in expr, panel["title"]
    assert selected >= NOWCAST_GAUGES, NOWCAST_GAUGES - selected
    # The realised (labelled) fraud rate stands beside the estimate.
    (rate_panel,) = (panel for panel in panels if panel["title"].startswith("Estimated fraud rate"))
    rate_names = set().union(*(metric_names(t["expr"]) for t in rate_panel["targets"]))
    assert "calmon_window_positive_ratio" in rate_names
    # Expected values are the regular ones at the estimated pi, for the three expected metrics.
    (expected_panel,) = (panel for panel in panels if panel["title"].startswith("Expected"))
    assert _series_names(expected_panel) >= {
        f"{metric}{suffix}"
        for metric in ("precision", "f1", "average_precision")
        for suffix in ("", " lower", " upper")
    }


EARLY_ROW = "Before the labels are complete: early estimates"
EARLY_GAUGES = frozenset(
    {
        "calmon_early_positive_ratio",
        "calmon_early_positive_ratio_ci_lower",
        "calmon_early_positive_ratio_ci_upper",
        "calmon_early_metric_value",
        "calmon_early_metric_ci_lower",
        "calmon_early_metric_ci_upper",
        "calmon_early_alert_precision_ratio",
        "calmon_early_alert_precision_ci_lower",
        "calmon_early_alert_precision_ci_upper",
        "calmon_early_fraud_labels",
        "calmon_early_window_start_timestamp_seconds",
        "calmon_early_look_timestamp_seconds",
        "calmon_alert_early_drop_evidence",
        "calmon_alert_signal",
    }
)


def test_early_row_shows_every_early_gauge() -> None:
    """The row "Before the labels are complete": the newest window waiting for labels, its
    estimates from the labels so far (fraud rate; precision, recall, calibrated AP), the alert
    precision from feedback, the drop evidence continued through the early evidence against the
    judged one and the threshold, and whether the page rests on it; each gauge selected for the
    dashboard's model and segment."""
    panels = _row_panels(EARLY_ROW)
    titles = " | ".join(panel["title"] for panel in panels).lower()
    for wanted in (
        "early fraud rate",
        "estimated from labels so far",
        "calibrated ap",
        "alert precision from investigators' feedback",
        "drop evidence continued through the early evidence vs threshold",
        "page rests on early evidence",
        "look",
    ):
        assert wanted in titles, wanted
    selected: set[str] = set()
    for panel in panels:
        assert panel["datasource"]["type"] == PROMETHEUS_TYPE, panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            names = metric_names(expr)
            selected |= names
            if names - {"calmon_reference_positive_ratio"}:
                assert 'model="$model", segment="$segment"' in expr, panel["title"]
    assert selected >= EARLY_GAUGES, EARLY_GAUGES - selected
    (metrics_panel,) = (panel for panel in panels if panel["title"].startswith("Early precision"))
    assert _series_names(metrics_panel) >= {
        f"{metric}{suffix}"
        for metric in ("precision", "recall", "average_precision")
        for suffix in ("", " lower", " upper")
    }
    (evidence,) = (panel for panel in panels if panel["title"].startswith("Drop evidence"))
    assert {"calmon_alert_early_drop_evidence", "calmon_alert_drop_evidence"} <= set().union(
        *(metric_names(t["expr"]) for t in evidence["targets"])
    ), "the continued statistic beside the judged one"
    (signal,) = (panel for panel in panels if panel["title"] == "Page rests on early evidence")
    (target,) = signal["targets"]
    assert 'calmon_alert_signal="early"' in target["expr"]
    (mapping,) = signal["fieldConfig"]["defaults"]["mappings"]
    assert mapping["options"]["1"]["text"] == "early evidence"


# Columns of the worker's measured values: an immature window's rest on its labels so far (the
# first to arrive are mostly frauds), so the dashboard, like the API, shows them for mature
# windows only; its estimates from the labels so far (window_metrics.early) stand in for them.
MEASURED_COLUMNS = re.compile(
    r"\bv\.(regular|calibrated|regular_ci_low|regular_ci_high|calibrated_ci_low|"
    r"calibrated_ci_high|prior_effect|performance_effect)\b|\bwm\.pi\b"
)
EARLY_SERIES = "from labels so far"
"""Every series of an early estimate says so in its name."""


def _selected(sql: str) -> list[tuple[str, str]]:
    """(expression, output name) of each item of a query's SELECT list (every item the history
    panels select is named: ``AS "..."``)."""
    body = re.search(r"\bSELECT\s+(.*?)\s+FROM\b", sql, re.DOTALL)
    assert body is not None, sql
    items = re.findall(r'(?:^|,)\s*(.*?)\s+AS\s+"([^"]+)"', body.group(1), re.DOTALL)
    return [(expression.strip(), name) for expression, name in items]


def test_history_shows_measured_values_of_mature_windows_only() -> None:
    """Every measured value the history panels select is shown for mature windows only, and every
    early estimate for windows still waiting for labels only (a judged window may keep its last
    estimate), named as an estimate."""
    checked = 0
    for where, sql in dashboard_sql():
        for expression, name in _selected(sql):
            if MEASURED_COLUMNS.search(expression):
                checked += 1
                assert expression.startswith("CASE WHEN wm.mature THEN "), (where, name)
            if "wm.early" in expression:
                checked += 1
                waiting_only = "CASE WHEN NOT wm.mature THEN (wm.early"
                assert expression.startswith(waiting_only), (where, name)
                assert EARLY_SERIES in name, (where, name)
    assert checked >= 20


def test_early_estimates_are_drawn_as_estimates() -> None:
    """The history's early series: their own colour, dashed, every point marked, each interval
    a band; the three the issue names are there (fraud rate, precision, calibrated AP)."""
    found = {}
    for panel in load_dashboard()["panels"]:
        if panel["type"] != "timeseries" or panel["datasource"]["type"] != POSTGRES_TYPE:
            continue
        for name in _series_names(panel):
            if EARLY_SERIES not in name or name.endswith((" lower", " upper")):
                continue
            found[name] = panel["title"]
            (style,) = (
                o["properties"]
                for o in panel["fieldConfig"]["overrides"]
                if o["matcher"] == {"id": "byName", "options": name}
            )
            props = {item["id"]: item["value"] for item in style}
            assert props["custom.lineStyle"]["fill"] == "dash", name
            assert props["custom.showPoints"] == "always", name
            (band,) = (
                o["properties"]
                for o in panel["fieldConfig"]["overrides"]
                if o["matcher"] == {"id": "byName", "options": f"{name} upper"}
            )
            assert {"id": "custom.fillBelowTo", "value": f"{name} lower"} in band, name
    assert {title.split(":")[0] for title in found.values()} >= {
        "Average precision",
        "pi vs pi0",
        "Precision at the threshold",
    }, found


def test_score_shift_stat_maps_the_flag() -> None:
    panel = _panel("Score shift (newest nowcast window)")
    (mapping,) = panel["fieldConfig"]["defaults"]["mappings"]
    assert set(mapping["options"]) == {"0", "1"}
    assert mapping["options"]["1"]["text"] == "score shift"
    assert panel["fieldConfig"]["defaults"]["noValue"] == "no nowcast"


def _series_names(panel: dict[str, Any]) -> set[str]:
    """The series (display) names a panel's queries produce: SQL output columns, and PromQL
    legends with ``{{metric}}`` expanded over the query's ``metric`` matcher."""
    names: set[str] = set()
    for target in panel["targets"]:
        if "rawSql" in target:
            names.update(re.findall(r'\bAS "([^"]+)"', target["rawSql"]))
            continue
        legend = target.get("legendFormat", "")
        if "{{metric}}" not in legend:
            names.add(legend)
            continue
        found = re.search(r'\bmetric=~?"([^"]+)"', target["expr"])
        assert found, f"{panel['title']}: {{{{metric}}}} legend without a metric matcher"
        names.update(legend.replace("{{metric}}", value) for value in found.group(1).split("|"))
    return names - {"time"}


def test_bands_and_overrides_name_existing_series() -> None:
    """An interval band (fillBelowTo) and a by-name override only work if the series they name
    exists in the panel: a renamed legend must not silently drop a band."""
    for panel in load_dashboard()["panels"]:
        if panel["type"] != "timeseries":
            continue
        series = _series_names(panel)
        for override in panel["fieldConfig"].get("overrides", []):
            matcher = override["matcher"]
            if matcher["id"] == "byName":
                assert matcher["options"] in series, (panel["title"], matcher["options"])
            if matcher["id"] == "byRegexp":
                pattern = re.compile(matcher["options"])
                assert any(pattern.fullmatch(name) for name in series), panel["title"]
            for item in override["properties"]:
                if item["id"] == "custom.fillBelowTo":
                    assert item["value"] in series, (panel["title"], item["value"])


def test_every_datasource_is_provisioned() -> None:
    provisioned = _provisioned()
    assert set(provisioned.values()) == {PROMETHEUS_TYPE, POSTGRES_TYPE}
    for where, datasource, _ in dashboard_queries(load_dashboard()):
        assert provisioned.get(datasource["uid"]) == datasource["type"], where


def test_dashboards_provider_points_where_compose_mounts_them() -> None:
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    mounts = compose["services"]["grafana"]["volumes"]
    (provider,) = yaml.safe_load((PROVISIONING / "dashboards" / "calmon.yml").read_text())[
        "providers"
    ]
    assert f"./config/grafana/dashboards:{provider['options']['path']}:ro" in mounts


def test_promql_selects_only_exported_metrics() -> None:
    documented = documented_metric_names()
    assert documented >= HISTOGRAMS
    allowed = exportable_names(documented, HISTOGRAMS)
    queries = dashboard_promql()
    assert queries
    for where, expr in queries:
        names = metric_names(expr)
        assert names, f"{where}: no metric in {expr!r}"
        assert names <= allowed, f"{where}: unknown {names - allowed}"


def test_sql_references_exist_in_the_schema() -> None:
    schema = {table.name: set(table.columns.keys()) for table in metadata.sorted_tables}
    queries = dashboard_sql()
    assert queries
    for where, sql in queries:
        pairs, bare = sql_references(sql)
        assert pairs, f"{where}: no column found in {sql!r}"
        assert not bare, f"{where}: unqualified identifiers {bare}"
        for table, column in pairs:
            assert column in schema.get(table, set()), f"{where}: {table}.{column} does not exist"


def _grafana_to_sql(sql: str) -> str:
    """Expand the Grafana macros and variables the way Grafana does for one model and range."""
    sql = re.sub(
        r"\$__timeFilter\(([\w.]+)\)",
        r"\1 BETWEEN '2026-01-01T00:00:00Z' AND '2026-02-01T00:00:00Z'",
        sql,
    )
    return sql.replace("$model", "fraud").replace("$segment", "all")


@contextmanager
def _seeded_postgresql() -> Iterator[Connection]:
    """A connection whose transaction holds a schema built from the metadata with the seed."""
    url = postgres_base_url()  # skips without PostgreSQL, fails so under CI=true
    schema = f"grafana_check_{os.getpid()}"
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(f"CREATE SCHEMA {schema}"))
            connection.execute(text(f"SET LOCAL search_path TO {schema}"))
            metadata.create_all(connection)
            _seed(connection)
            yield connection
            connection.rollback()
    finally:
        with engine.begin() as connection:
            connection.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        engine.dispose()


@pytest.mark.postgres
def test_sql_runs_on_postgresql() -> None:
    """Each query runs on a schema built from the metadata and returns the seeded windows."""
    with _seeded_postgresql() as connection:
        for where, sql in dashboard_sql():
            rows = connection.execute(text(_grafana_to_sql(sql))).all()
            assert rows, f"{where}: no row for the seeded window"


@pytest.mark.postgres
def test_sql_shows_a_waiting_windows_estimates_not_its_measured_values() -> None:
    """On PostgreSQL (JSON operators, casts): the window still waiting for labels has every
    measured value null and every early estimate set; the mature window the other way round."""
    checked = 0
    with _seeded_postgresql() as connection:
        for where, sql in dashboard_sql():
            named = _selected(sql)
            if ("wm.window_start", "time") not in named:
                continue
            measured = [name for expression, name in named if MEASURED_COLUMNS.search(expression)]
            early = [name for expression, name in named if "wm.early" in expression]
            rows = connection.execute(text(_grafana_to_sql(sql))).mappings().all()
            by_start = {row["time"]: row for row in rows}
            judged, waiting = by_start[SEEDED_MATURE], by_start[SEEDED_WAITING]
            for name in measured:
                checked += 1
                assert judged[name] is not None, (where, name)
                assert waiting[name] is None, (where, name)
            for name in early:
                checked += 1
                assert judged[name] is None, (where, name)
                assert waiting[name] is not None, (where, name)
    assert checked >= 20


SEEDED_MATURE = datetime(2026, 1, 10, tzinfo=UTC)
SEEDED_WAITING = datetime(2026, 1, 11, tzinfo=UTC)
# A window's early estimate as app/monitoring/early.py stores it (the part the dashboard reads).
SEEDED_EARLY: dict[str, object] = {
    "estimate": True,
    "as_of": "2026-01-13T00:00:00+00:00",
    "look": 1,
    "labels_so_far": {"frauds": 7, "legitimate": 60, "by_source": {"feedback": 67}},
    **{
        f"{name}{suffix}": value
        for name, (low, mid, high) in {
            "pi": (0.008, 0.011, 0.015),
            "precision": (0.05, 0.08, 0.12),
            "recall": (0.4, 0.6, 0.75),
            "average_precision": (0.2, 0.3, 0.45),
        }.items()
        for suffix, value in (("", mid), ("_ci", [low, high]))
    },
}


def _seed(connection: Connection) -> None:
    """A judged window and the next one still waiting for labels (its values stored, as the
    worker stores them, and its early estimate), written through the connection's transaction.
    The mature window keeps an early estimate too, as a judged window may: it must not show."""
    with Session(bind=connection) as session:
        model = new_model(
            session, threshold=0.5, min_label_coverage=0.5, alert_capacity=80, review_cost=2.0
        )
        for start, mature in ((SEEDED_MATURE, True), (SEEDED_WAITING, False)):
            window = add_window_metrics(
                session,
                model.id,
                start,
                counts=(1000, 900 if mature else 40, 9),
                verdict="prior_shift" if mature else "insufficient_data",
                mature=mature,
                early=SEEDED_EARLY,
            )
            budget = ["precision_at_k", "precision_at_k_max", "alerts", "entity_precision_at_k"]
            budget += ["value_recall"]
            budget += ["value_precision", "net_savings"]
            for metric in ("average_precision", "f1", "precision", *budget):
                add_metric_value(
                    session,
                    window,
                    metric,
                    regular=0.5,
                    regular_ci_low=0.4,
                    regular_ci_high=0.6,
                    calibrated=0.4,
                    calibrated_ci_low=0.3,
                    calibrated_ci_high=0.5,
                    prior_effect=0.1,
                    performance_effect=0.0,
                )
