"""The example Alertmanager config loads (amtool check-config) and routes as documented."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
import yaml

from app.cli import build_parser
from tests.support.tools import REPO_ROOT, require_tool, run_tool

CONFIG = REPO_ROOT / "config" / "alertmanager" / "alertmanager.yml"
COMPOSE = REPO_ROOT / "docker-compose.yml"
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
        # A score shift warns the team; it does not page (labels decide whether it cost).
        (
            ("alertname=CalmonScoreShift", "severity=warning", "model=fraud", "segment=all"),
            "team-queue",
        ),
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


@pytest.mark.parametrize("target", ["CalmonPriorShift", "CalmonScoreShift"])
def test_drop_inhibits_on_the_same_series(target: str) -> None:
    """While the drop pages for a model/segment, its prior-shift note and its score-shift
    warning are held back, for that model/segment only (the running Alertmanager checks the
    prior-shift case in tests/e2e/test_prometheus_alertmanager.py)."""
    config = yaml.safe_load(CONFIG.read_text())
    inhibit = [
        rule
        for rule in config["inhibit_rules"]
        if rule["source_matchers"] == ['alertname="CalmonCalibratedMetricDrop"']
        and rule["target_matchers"] == [f'alertname="{target}"']
    ]
    assert len(inhibit) == 1
    assert set(inhibit[0]["equal"]) == {"model", "segment"}


def test_the_drop_inhibits_nothing_else() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    targets = {
        matcher
        for rule in config["inhibit_rules"]
        if rule["source_matchers"] == ['alertname="CalmonCalibratedMetricDrop"']
        for matcher in rule["target_matchers"]
    }
    assert targets == {'alertname="CalmonPriorShift"', 'alertname="CalmonScoreShift"'}


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


def test_every_receiver_reaches_a_compose_service_that_listens_there() -> None:
    """The receivers' webhooks name the compose file's alert-log service at the host and port
    its command listens on, and Alertmanager starts after it: the alerts of `docker compose up`
    reach a receiver that exists (issue 25; they went to an undefined pager-relay host)."""
    config = yaml.safe_load(CONFIG.read_text())
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    urls = [
        urlsplit(webhook["url"])
        for receiver in config["receivers"]
        for webhook in receiver.get("webhook_configs", [])
    ]
    assert {receiver["name"] for receiver in config["receivers"]} == {
        "pager",
        "team-queue",
        "low-urgency",
    }
    assert len(urls) == len(config["receivers"])  # every receiver notifies somewhere
    for url in urls:
        service = services[url.hostname]
        args = build_parser().parse_args(service["command"])
        assert args.command == "alert-log"
        assert (args.host, args.port) == ("0.0.0.0", url.port)
        assert "alert-log" in services["alertmanager"]["depends_on"]
