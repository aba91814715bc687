"""The example Alertmanager config loads (amtool check-config) and routes as documented."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.support.tools import REPO_ROOT, require_tool, run_tool

CONFIG = REPO_ROOT / "config" / "alertmanager" / "alertmanager.yml"
RULES = REPO_ROOT / "config" / "prometheus" / "rules" / "calmon-alerts.yml"


def test_config_is_valid() -> None:
    amtool = require_tool("amtool")
    result = run_tool(amtool, "check-config", str(CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        (("alertname=CalmonCalibratedMetricDrop", "severity=page", "model=fraud"), "pager"),
        (
            ("alertname=CalmonCalibratedMetricDrop", "severity=page", "trigger=floor"),
            "pager",
        ),
        (("alertname=CalmonPriorShift", "severity=info", "model=fraud"), "low-urgency"),
        # Even a local edit that raises the prior shift to page must not reach the pager.
        (("alertname=CalmonPriorShift", "severity=page", "model=fraud"), "low-urgency"),
        (("alertname=CalmonWorkerStalled", "severity=warning"), "team-queue"),
        (("alertname=CalmonLabelsStalled", "severity=warning", "model=fraud"), "team-queue"),
        (("alertname=CalmonIngestErrors", "severity=warning", "model=fraud"), "team-queue"),
    ],
)
def test_routes(labels: tuple[str, ...], receiver: str) -> None:
    amtool = require_tool("amtool")
    result = run_tool(
        amtool,
        "config",
        "routes",
        "test",
        f"--config.file={CONFIG}",
        f"--verify.receivers={receiver}",
        *labels,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_drop_inhibits_prior_shift_on_the_same_series() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    inhibit = [
        rule
        for rule in config["inhibit_rules"]
        if rule["source_matchers"] == ['alertname="CalmonCalibratedMetricDrop"']
    ]
    assert len(inhibit) == 1
    assert inhibit[0]["target_matchers"] == ['alertname="CalmonPriorShift"']
    assert set(inhibit[0]["equal"]) == {"model", "segment"}


def test_matchers_name_existing_alerts() -> None:
    """Every alertname a route or an inhibit rule matches is one of the rules' alerts."""
    alerts = {
        rule["alert"]
        for group in yaml.safe_load(RULES.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    config = yaml.safe_load(CONFIG.read_text())
    matchers = [
        matcher
        for route in config["route"].get("routes", [])
        for matcher in route.get("matchers", [])
    ] + [
        matcher
        for rule in config["inhibit_rules"]
        for key in ("source_matchers", "target_matchers")
        for matcher in rule[key]
    ]
    named: set[str] = set()
    for matcher in matchers:
        found = re.fullmatch(r'alertname=~?"([^"]*)"', matcher)
        if found:
            named.update(found.group(1).split("|"))
    assert named
    assert named <= alerts, named - alerts
