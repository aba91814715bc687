"""`calmon demo` leaves a model whose verdicts show the prior shift and the drop."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest

from app.demo.stream import DEGRADED_FROM, SWINGS
from tests.support.server import (
    REPO_ROOT,
    calmon_process,
    clean_environment,
    free_port,
    running_server,
)

DAYS = 42


def _demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "demo", "--exit", "--rows-per-day", "3000", *args],
        cwd=REPO_ROOT,
        # Fewer bootstrap replicates than the default 1,000: the verdicts do not use them.
        env=clean_environment({"CALMON_BOOTSTRAP_REPLICATES": "200", **(env or {})}),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _check_verdicts(base_url: str, token: str) -> None:
    response = httpx.get(
        f"{base_url}/v1/models/demo-card-fraud/metrics",
        params={"metric": "average_precision"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    points = response.json()["points"]
    assert len(points) == DAYS
    first = date.fromisoformat(points[0]["window_start"][:10])
    assert first == date.today() - timedelta(days=DAYS)  # the last day is yesterday (UTC)
    by_day = {
        (date.fromisoformat(p["window_start"][:10]) - first).days: p["verdict"] for p in points
    }
    assert {by_day[day] for day in range(14)} == {"reference"}
    swings = [by_day[day] for day in SWINGS]
    assert swings.count("prior_shift") >= len(SWINGS) - 2, by_day
    assert "performance_drop" not in [by_day[day] for day in range(DEGRADED_FROM)]
    drops = [by_day[day] for day in range(DEGRADED_FROM, DAYS - 2)]
    assert drops.count("performance_drop") >= len(drops) - 2, by_day
    # The newest two days have no labels yet.
    assert {by_day[DAYS - 1], by_day[DAYS - 2]} <= {"insufficient_data", "score_shift"}


@pytest.mark.e2e
def test_demo_on_its_own_sqlite_service(tmp_path: Path) -> None:
    done = _demo("--port", str(free_port()), "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "alert state: drop" in done.stdout
    token = re.search(r"CALMON_TOKEN=(\S+)", done.stdout)
    assert token is not None
    # The demo's service stopped (--exit); its database still holds what it showed.
    url = f"sqlite:///{tmp_path / 'calmon-demo.sqlite3'}"
    with running_server(url, log_dir=tmp_path) as server:
        _check_verdicts(server.base_url, token.group(1))


@pytest.mark.e2e
def test_demo_against_a_running_service_with_its_own_worker(
    backend: str, tmp_path: Path, make_token: Callable[..., str], database_url: str
) -> None:
    if backend != "postgresql":
        pytest.skip("the SQLite service is covered above; this is the PostgreSQL deployment")
    token = make_token("admin", "ingest", "read")
    settings = {"CALMON_BOOTSTRAP_REPLICATES": "200"}
    with (
        running_server(database_url, log_dir=tmp_path) as server,
        calmon_process(["worker"], database_url, env=settings),
    ):
        done = _demo("--url", server.base_url, env={"CALMON_TOKEN": token})
        assert done.returncode == 0, done.stderr
        _check_verdicts(server.base_url, token)


def test_demo_says_when_its_port_is_taken(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = _demo("--port", str(port), "--data-dir", str(tmp_path))
    assert done.returncode == 1
    assert "port in use? try --port" in done.stderr
    assert "Traceback" not in done.stderr
