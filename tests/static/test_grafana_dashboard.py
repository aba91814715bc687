"""The provisioned Grafana dashboard only asks for things calmon has.

Every panel's data source is provisioned (by uid and type), every PromQL expression selects a
metric calmon exports (docs/interfaces.md section 3), and every SQL query references tables and
columns of the SQLAlchemy metadata; on PostgreSQL the queries also run against that schema.
"""

from __future__ import annotations

import os
import re
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


@pytest.mark.postgres
def test_sql_runs_on_postgresql() -> None:
    """Each query runs on a schema built from the metadata and returns the seeded window."""
    url = postgres_base_url()  # skips without PostgreSQL, fails so under CI=true
    schema = f"grafana_check_{os.getpid()}"
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(f"CREATE SCHEMA {schema}"))
            connection.execute(text(f"SET LOCAL search_path TO {schema}"))
            metadata.create_all(connection)
            _seed(connection)
            for where, sql in dashboard_sql():
                rows = connection.execute(text(_grafana_to_sql(sql))).all()
                assert rows, f"{where}: no row for the seeded window"
            connection.rollback()
    finally:
        with engine.begin() as connection:
            connection.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        engine.dispose()


def _seed(connection: Connection) -> None:
    """One judged window with two metrics, written through the connection's transaction."""
    with Session(bind=connection) as session:
        model = new_model(session, threshold=0.5, min_label_coverage=0.5)
        window = add_window_metrics(
            session,
            model.id,
            datetime(2026, 1, 10, tzinfo=UTC),
            counts=(1000, 900, 9),
            verdict="prior_shift",
        )
        for metric in ("average_precision", "f1"):
            add_metric_value(
                session,
                window,
                metric,
                regular=0.5,
                calibrated=0.4,
                prior_effect=0.1,
                performance_effect=0.0,
            )
