"""What a finished `calmon demo` must show, checked the same way wherever it ran: its own SQLite
service (the README's command, tests/integration/test_readme_replay.py) or a running service
with its own worker (tests/integration/test_demo.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import date, timedelta

import httpx

from app.demo.stream import DAYS, DEGRADED_DAYS, REFERENCE_DAYS, SWINGS, LabelFeed
from tests.support.server import REPO_ROOT, clean_environment

HORIZON_DAYS = LabelFeed().horizon_days
DEMO_ENV = {
    # Fewer bootstrap replicates than the default 1,000: no verdict or page uses them.
    "CALMON_BOOTSTRAP_REPLICATES": "200",
    # The demo waits for the worker after each live night: an idle worker that looks again
    # every 0.2 s instead of every second (the default) takes the night sooner, nothing else.
    "CALMON_WORKER_POLL_SECONDS": "0.2",
}


def run_demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`calmon demo --exit <args>` to the end, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "demo", "--exit", *args],
        cwd=REPO_ROOT,
        env=clean_environment({**DEMO_ENV, **(env or {})}),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def check_printout(stdout: str) -> None:
    """It paged on early evidence, four days after the model degraded (its seed's run)."""
    assert "alert state: drop (signals: early)" in stdout
    paged = re.search(r"paged (\d+) days after the model degraded \([-\d]+\), on (.*?):", stdout)
    assert paged is not None, stdout
    assert (int(paged[1]), paged[2]) == (4, "early evidence"), stdout


def check_series(base_url: str, token: str) -> None:
    """The demo model's series and alert state as the demo left them (the last day yesterday)."""
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
