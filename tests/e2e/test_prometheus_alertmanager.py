"""The example Alertmanager config, run by the real Alertmanager (Debian package).

amtool checks syntax and routing offline; inhibition only exists in a running Alertmanager. Alerts
are posted the way Prometheus posts them (API v2) and read back with their suppression state.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import free_port, stop_process
from tests.support.tools import REPO_ROOT, require_tool
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

CONFIG = REPO_ROOT / "config" / "alertmanager" / "alertmanager.yml"


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    binary = require_tool("prometheus-alertmanager")
    port = free_port()
    log = (tmp_path / "alertmanager.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={CONFIG}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",  # no gossip port: a single instance
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            assert process.poll() is None, (tmp_path / "alertmanager.log").read_text()
            try:
                with urllib.request.urlopen(f"{base}/-/ready", timeout=1) as response:
                    return bool(response.status == 200)
            except OSError:
                return False

        wait_for(ready, "alertmanager ready", timeout=20)
        yield base
    finally:
        stop_process(process)
        log.close()


def post_alerts(base: str, alerts: list[dict[str, Any]]) -> None:
    request = urllib.request.Request(
        f"{base}/api/v2/alerts",
        data=json.dumps(alerts).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def alert_states(base: str) -> dict[tuple[str, str], str]:
    """(alertname, model) -> active | suppressed."""
    with urllib.request.urlopen(f"{base}/api/v2/alerts", timeout=5) as response:
        alerts = json.loads(response.read())
    return {
        (alert["labels"]["alertname"], alert["labels"].get("model", "")): alert["status"]["state"]
        for alert in alerts
    }


def alert(name: str, severity: str, model: str) -> dict[str, Any]:
    return {
        "labels": {"alertname": name, "severity": severity, "model": model, "segment": "all"},
        "annotations": {"summary": name},
        "startsAt": datetime.now(UTC).isoformat(),
    }


def test_a_drop_inhibits_the_prior_shift_and_score_shift_of_the_same_series(
    alertmanager: str,
) -> None:
    post_alerts(
        alertmanager,
        [
            alert("CalmonCalibratedMetricDrop", "page", "fraud"),
            alert("CalmonPriorShift", "info", "fraud"),
            alert("CalmonScoreShift", "warning", "fraud"),
            alert("CalmonPriorShift", "info", "other"),  # no drop for this model
            alert("CalmonScoreShift", "warning", "other"),
        ],
    )
    states = wait_for(
        lambda: found if len(found := alert_states(alertmanager)) == 5 else None,
        "the five alerts",
        timeout=10,
    )
    assert states == {
        ("CalmonCalibratedMetricDrop", "fraud"): "active",
        ("CalmonPriorShift", "fraud"): "suppressed",
        ("CalmonScoreShift", "fraud"): "suppressed",
        ("CalmonPriorShift", "other"): "active",
        ("CalmonScoreShift", "other"): "active",
    }
