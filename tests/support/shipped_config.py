"""The queries calmon's shipped monitoring configuration runs: the Grafana dashboard's PromQL
and SQL, and the Prometheus rules' PromQL.

The static checks (tests/static) and the tests against a real scrape or a real Prometheus read
them from here, so every test asks the same questions of the same files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

from tests.support.tools import REPO_ROOT

DASHBOARD_PATH = REPO_ROOT / "config" / "grafana" / "dashboards" / "calmon.json"
PROMETHEUS_DIR = REPO_ROOT / "config" / "prometheus"
RULE_FILES = sorted((PROMETHEUS_DIR / "rules").glob("*.yml"))
PROMETHEUS_TYPE = "prometheus"
POSTGRES_TYPE = "grafana-postgresql-datasource"


def load_dashboard() -> dict[str, Any]:
    """The provisioned dashboard, as Grafana reads it."""
    return json.loads(DASHBOARD_PATH.read_text())  # type: ignore[no-any-return]


def dashboard_queries(
    board: dict[str, Any],
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, datasource, query) for every panel target and every template variable."""
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            datasource = target.get("datasource", panel.get("datasource"))
            yield panel["title"], datasource, target
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            yield f"${variable['name']}", variable["datasource"], {"rawSql": variable["query"]}


def dashboard_sql() -> list[tuple[str, str]]:
    """(panel title or $variable, SQL) of every PostgreSQL query in the dashboard."""
    return [
        (where, query["rawSql"])
        for where, datasource, query in dashboard_queries(load_dashboard())
        if datasource["type"] == POSTGRES_TYPE
    ]


def dashboard_promql() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every Prometheus query in the dashboard."""
    return [
        (where, query["expr"])
        for where, datasource, query in dashboard_queries(load_dashboard())
        if datasource["type"] == PROMETHEUS_TYPE
    ]


def rule_expressions() -> list[tuple[str, str]]:
    """(rule name, PromQL) of every alerting and recording rule."""
    return [
        (rule.get("alert") or rule["record"], rule["expr"])
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
    ]
