"""`calmon demo` leaves a model whose verdicts show the prior shift and whose degradation paged
on early labels, the degraded days still waiting for theirs."""

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

from app.demo.stream import DAYS, DEGRADED_DAYS, REFERENCE_DAYS, SWINGS, LabelFeed
from tests.support.server import (
    REPO_ROOT,
    calmon_process,
    clean_environment,
    free_port,
    running_server,
)

HORIZON_DAYS = LabelFeed().horizon_days


def _demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "demo", "--exit", *args],
        cwd=REPO_ROOT,
        # Fewer bootstrap replicates than the default 1,000: no verdict or page uses them.
        env=clean_environment({"CALMON_BOOTSTRAP_REPLICATES": "200", **(env or {})}),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _check_printout(stdout: str) -> None:
    """It paged on early evidence, four days after the model degraded (its seed's run)."""
    assert "alert state: drop (signals: early)" in stdout
    paged = re.search(r"paged (\d+) days after the model degraded \([-\d]+\), on (.*?):", stdout)
    assert paged is not None, stdout
    assert (int(paged[1]), paged[2]) == (4, "early evidence"), stdout


def _check_series(base_url: str, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    response = httpx.get(
        f"{base_url}/v1/models/demo-card-fraud/metrics",
        params={"metric": "average_precision"},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    points = response.json()["points"]
    assert len(points) == DAYS
    first = date.fromisoformat(points[0]["window_start"][:10])
    assert first == date.today() - timedelta(days=DAYS)  # the last day is yesterday (UTC)
    by_day = {(date.fromisoformat(p["window_start"][:10]) - first).days: p for p in points}
    verdicts = {day: p["verdict"] for day, p in by_day.items()}
    assert {verdicts[day] for day in range(REFERENCE_DAYS)} == {"reference"}
    swings = [verdicts[day] for day in SWINGS]
    assert swings.count("prior_shift") >= len(SWINGS) - 2, verdicts
    # The newest days wait for their labels (30 days after each ends): not judged, their
    # measured values withheld, their early estimates shown; the degraded ones among them.
    waiting = range(DAYS - HORIZON_DAYS, DAYS)
    assert all(by_day[day]["mature"] for day in range(DAYS - HORIZON_DAYS)), verdicts
    for day in waiting:
        assert not by_day[day]["mature"], by_day[day]
        assert by_day[day]["calibrated"] is None, by_day[day]
        assert verdicts[day] in {"insufficient_data", "score_shift"}, verdicts
    assert "performance_drop" not in verdicts.values(), verdicts
    # The degraded days have early estimates, but the newest two: yesterday just ended (look
    # 0), and the day before's feedback, stamped at the midnight after the night it came in,
    # counts from the look after that midnight.
    degraded = [by_day[day]["early"] for day in range(DAYS - DEGRADED_DAYS, DAYS - 2)]
    assert all(e is not None and e["value"] is not None for e in degraded), degraded
    for day in (DAYS - 2, DAYS - 1):
        newest = by_day[day]["early"]
        assert newest["value"] is None, newest
        assert "no fraud label" in newest["reason"], newest
    alerts = httpx.get(f"{base_url}/v1/models/demo-card-fraud/alerts", headers=headers).json()
    assert alerts["state"] == "drop"
    assert alerts["segments"][0]["signals"] == ["early"]


@pytest.mark.e2e
def test_demo_on_its_own_sqlite_service(tmp_path: Path) -> None:
    done = _demo("--port", str(free_port()), "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    _check_printout(done.stdout)
    token = re.search(r"CALMON_TOKEN=(\S+)", done.stdout)
    assert token is not None
    # The demo's service stopped (--exit); its database still holds what it showed.
    url = f"sqlite:///{tmp_path / 'calmon-demo.sqlite3'}"
    with running_server(url, log_dir=tmp_path) as server:
        _check_series(server.base_url, token.group(1))


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
        _check_printout(done.stdout)
        _check_series(server.base_url, token)


def test_demo_refuses_a_run_too_short_to_show_it() -> None:
    done = _demo("--days", "40")
    assert done.returncode == 2
    assert "--days 40: at least 60" in done.stderr


def test_demo_says_when_its_port_is_taken(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = _demo("--port", str(port), "--data-dir", str(tmp_path))
    assert done.returncode == 1
    assert "port in use? try --port" in done.stderr
    assert "Traceback" not in done.stderr
