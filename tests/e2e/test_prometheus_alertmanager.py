"""The example Alertmanager config, run by the real Alertmanager (Debian package).

amtool checks syntax and routing offline; inhibition and delivery only exist in a running
Alertmanager. Alerts are posted the way Prometheus posts them (API v2) and read back with their
suppression state, or from the log of the receiver the compose file runs (`calmon alert-log`).
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.server import calmon_process, free_port, stop_process
from tests.support.tools import REPO_ROOT, require_tool
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

CONFIG = REPO_ROOT / "config" / "alertmanager" / "alertmanager.yml"


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[str]:
    with running_alertmanager(CONFIG, tmp_path) as base:
        yield base


@contextmanager
def running_alertmanager(config: Path, tmp_path: Path) -> Iterator[str]:
    """A real Alertmanager on ``config``; its base URL."""
    binary = require_tool("prometheus-alertmanager")
    port = free_port()
    log = (tmp_path / "alertmanager.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
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
    expected = {
        ("CalmonCalibratedMetricDrop", "fraud"): "active",
        ("CalmonPriorShift", "fraud"): "suppressed",
        ("CalmonScoreShift", "fraud"): "suppressed",
        ("CalmonPriorShift", "other"): "active",
        ("CalmonScoreShift", "other"): "active",
    }
    # Alertmanager's inhibitor learns of a new source alert from its own subscription, apart
    # from the API that lists the alerts: the five can be listed, all active, a moment before
    # the drop mutes its series' shifts. Wait for the states to settle, not for the count.
    seen: list[dict[tuple[str, str], str]] = []

    def settled() -> dict[tuple[str, str], str] | None:
        seen.append(alert_states(alertmanager))
        return seen[-1] if seen[-1] == expected else None

    wait_for(
        settled,
        "the drop inhibiting the prior and score shifts of its own series only",
        timeout=10,
        diagnostics=lambda: f"last states: {seen[-1] if seen else None}",
    )


def test_alerts_reach_the_alert_log_the_compose_file_runs(tmp_path: Path) -> None:
    """The shipped receivers, delivered by a real Alertmanager to a real `calmon alert-log`:
    the compose network's host name becomes the loopback address, and the group waits are cut
    from 30 s to none (what is tested is the path from route to receiver, not the timing)."""
    port = free_port()
    config = yaml.safe_load(CONFIG.read_text())
    config["route"]["group_wait"] = "0s"
    for receiver in config["receivers"]:
        for webhook in receiver["webhook_configs"]:
            webhook["url"] = webhook["url"].replace("alert-log:9095", f"127.0.0.1:{port}")
    shipped = tmp_path / "alertmanager.yml"
    shipped.write_text(yaml.safe_dump(config))
    log_path = tmp_path / "alert-log.log"
    command = ["alert-log", "--port", str(port)]
    unused = f"sqlite:///{tmp_path / 'unused.sqlite3'}"  # the alert log opens no database
    with (
        calmon_process(command, unused, log_path=log_path) as (sink, _),
        running_alertmanager(shipped, tmp_path) as base,
    ):
        post_alerts(
            base,
            [
                alert("CalmonCalibratedMetricDrop", "page", "fraud"),
                alert("CalmonIngestErrors", "warning", "fraud"),
            ],
        )

        def delivered() -> dict[str, str] | None:
            lines = [json.loads(line) for line in log_path.read_text().splitlines() if line]
            routes = {
                line["alertname"]: line["route"]
                for line in lines
                if line.get("event") == "alert_firing"
            }
            return routes if len(routes) == 2 else None

        routes = wait_for(delivered, "both alerts in the alert log", timeout=30, poll=0.2)
        assert stop_process(sink) == 0
    assert routes == {"CalmonCalibratedMetricDrop": "/page", "CalmonIngestErrors": "/ticket"}
