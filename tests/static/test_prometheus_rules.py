"""Prometheus configuration and alert rules, checked by promtool (Debian package ``prometheus``).

The rule unit tests themselves live in config/prometheus/tests/*.yml (each rule fires on its
degradation series and stays silent on a pure prior drift); this module runs them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.support.prometheus import render_loopback_config
from tests.support.promql import documented_metric_names, exportable_names, metric_names
from tests.support.shipped_config import PROMETHEUS_DIR, RULE_FILES, rule_expressions
from tests.support.tools import require_tool, run_tool

RULE_TESTS = sorted((PROMETHEUS_DIR / "tests").glob("*.yml"))


def _ok(result_args: tuple[str, ...]) -> str:
    result = run_tool(*result_args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_compose_config_is_valid(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    # promtool insists that the scrape token's file exists: the config as shipped, beside its
    # rules, with the compose secret's path pointed at a scratch file (nothing else changed).
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    assert job["authorization"]["credentials_file"] == "/run/secrets/calmon_metrics_token"
    token = tmp_path / "calmon_metrics_token"
    token.write_text("a-token")
    job["authorization"]["credentials_file"] = str(token)
    (tmp_path / "rules").symlink_to(PROMETHEUS_DIR / "rules")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    out = _ok((promtool, "check", "config", str(tmp_path / "prometheus.yml")))
    # The config loads the rules through a glob: an empty match would silently load nothing.
    assert "11 rules found" in out


def test_rules_are_valid() -> None:
    promtool = require_tool("promtool")
    assert RULE_FILES
    _ok((promtool, "check", "rules", *map(str, RULE_FILES)))


def test_rule_unit_tests_pass() -> None:
    promtool = require_tool("promtool")
    assert {p.name for p in RULE_TESTS} >= {"degradation.yml", "prior_drift.yml", "score_shift.yml"}
    out = _ok((promtool, "test", "rules", *map(str, RULE_TESTS)))
    assert "FAILED" not in out


def test_every_alert_is_unit_tested_both_ways() -> None:
    """Each alert appears in a firing expectation and in a silent expectation."""
    alerts = {
        rule["alert"]
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    fired: set[str] = set()
    silent: set[str] = set()
    for path in RULE_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (fired if check.get("exp_alerts") else silent).add(check["alertname"])
    assert alerts - fired == set()
    assert alerts - silent == set()


def test_rules_select_only_documented_metrics() -> None:
    allowed = exportable_names(documented_metric_names(), {"calmon_http_request_duration_seconds"})
    for name, expr in rule_expressions():
        names = metric_names(expr)
        assert names, name
        assert names <= allowed, f"{name}: unknown {names - allowed}"


def _alert_rules() -> list[dict[str, Any]]:
    return [
        rule
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def test_prior_shift_is_never_a_page() -> None:
    for rule in _alert_rules():
        if rule["alert"] == "CalmonPriorShift":
            assert rule["labels"]["severity"] == "info"
        if rule["alert"] == "CalmonCalibratedMetricDrop":
            assert rule["labels"]["severity"] == "page"


def test_score_shift_is_a_warning_on_the_collector_flag() -> None:
    """CalmonScoreShift warns (never pages: labels decide whether performance dropped) and reads
    only the collector's flag, so its threshold (misfit p < 0.001) is decided in one place."""
    (rule,) = (rule for rule in _alert_rules() if rule["alert"] == "CalmonScoreShift")
    assert rule["labels"]["severity"] == "warning"
    assert metric_names(rule["expr"]) == {"calmon_nowcast_score_shift"}
    assert "for" in rule


def test_annotation_queries_select_only_documented_metrics() -> None:
    """Annotations that query Prometheus (``query`` in a template) name documented gauges."""
    allowed = exportable_names(documented_metric_names(), {"calmon_http_request_duration_seconds"})
    for rule in _alert_rules():
        for text in rule.get("annotations", {}).values():
            queries = re.findall(r'printf "((?:[^"\\]|\\.)*)"[^}]*\| query', text)
            # The house form is `printf "<PromQL with %q>" $labels.x ... | query`; any other
            # form would escape this check.
            assert len(queries) == text.count("query"), (rule["alert"], text)
            for query in queries:
                names = metric_names(query.replace("%q", '""'))
                assert names, (rule["alert"], query)
                assert names <= allowed, f"{rule['alert']}: unknown {names - allowed}"


def test_loopback_rendering_is_valid(tmp_path: Path) -> None:
    """The e2e test's rendering (loopback target, short intervals and `for:`) still loads."""
    promtool = require_tool("promtool")
    config = render_loopback_config(
        tmp_path, target="127.0.0.1:8000", interval_seconds=1, for_duration="2s"
    )
    out = _ok((promtool, "check", "config", str(config)))
    assert "11 rules found" in out
    rendered = yaml.safe_load((tmp_path / "rules" / "calmon-alerts.yml").read_text())
    durations = {rule["for"] for group in rendered["groups"] for rule in group["rules"]}
    assert durations == {"2s"}
