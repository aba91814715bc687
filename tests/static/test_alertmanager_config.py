"""The example Alertmanager config loads (amtool check-config) and routes as documented."""

from __future__ import annotations

import pytest
import yaml

from tests.support.tools import REPO_ROOT, require_tool, run_tool

CONFIG = REPO_ROOT / "config" / "alertmanager" / "alertmanager.yml"


def test_config_is_valid() -> None:
    amtool = require_tool("amtool")
    result = run_tool(amtool, "check-config", str(CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        (("alertname=CalmonCalibratedMetricDrop", "severity=page", "model=fraud"), "pager"),
        (("alertname=CalmonPriorShift", "severity=info", "model=fraud"), "low-urgency"),
        # Even a local edit that raises the prior shift to page must not reach the pager.
        (("alertname=CalmonPriorShift", "severity=page", "model=fraud"), "low-urgency"),
        (("alertname=CalmonWorkerStalled", "severity=warning"), "team-queue"),
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
