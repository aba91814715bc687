"""calmon serve + calmon worker + the real Prometheus with the project's alert rules.

Two models receive ten days of daily predictions over HTTP. "degrading" keeps its fraud rate and
loses ranking quality in the last two days (P(x|y) drift); "drifting" keeps its model and sees
its fraud rate fall (pure prior drift), which drags its regular average precision down.
Prometheus scrapes calmon's /metrics and evaluates config/prometheus/rules (with `for:`
shortened); the drop alert must fire for "degrading" and stay inactive for "drifting".

PostgreSQL only: it is the deployment this mirrors (API and worker as separate processes).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.static.test_grafana_dashboard import dashboard_promql
from tests.support.prometheus import PrometheusServer, run_prometheus
from tests.support.server import LiveServer, clean_environment, running_server, stop_process

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DAYS = 10
CHANGE_DAY = 8
ROWS_PER_DAY = 6_000
THRESHOLD = 2.0
FLOOR = 0.3  # calibrated AP ~0.54 before the change, ~0.07 after it ("degrading")
DEADLINE_SECONDS = 120


def day_rows(rng: np.random.Generator, start: datetime, pi: float, mu: float) -> dict[str, Any]:
    """One day of columnar rows: negatives ~ N(0, 1), positives ~ N(mu, 1) (Siblini 3.2)."""
    labels = (rng.random(ROWS_PER_DAY) < pi).astype(int)
    scores = rng.normal(0.0, 1.0, ROWS_PER_DAY) + mu * labels
    step = 86_400 / ROWS_PER_DAY
    stamp = start.strftime("%Y%m%d")
    return {
        "id": [f"{stamp}-{i}" for i in range(ROWS_PER_DAY)],
        "timestamp": [
            (start + timedelta(seconds=i * step)).isoformat() for i in range(ROWS_PER_DAY)
        ],
        "score": scores.round(6).tolist(),
        "label": labels.tolist(),
    }


# The stream's last day is yesterday, so its windows look current to the rules.
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def post_stream(client: httpx.Client, model: str, *, degrade: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    spec = {
        "name": model,
        "threshold": THRESHOLD,
        "granularity": "day",
        "timezone": "UTC",
        "alert_floor": FLOOR,
    }
    assert client.post("/v1/models", json=spec).status_code == 201
    for day in range(DAYS):
        changed = day >= CHANGE_DAY
        pi = 0.01 if degrade or not changed else 0.004
        mu = 1.0 if degrade and changed else 2.5
        body = {
            "batch_id": f"day-{day}",
            "columns": day_rows(rng, TODAY - timedelta(days=DAYS - day), pi, mu),
        }
        response = client.post(f"/v1/models/{model}/batches", json=body, timeout=60)
        assert response.status_code == 201, response.text


@pytest.fixture
def worker(database_url: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real `calmon worker` process on the test database."""
    env = clean_environment(
        {
            "CALMON_DATABASE_URL": database_url,
            "CALMON_WORKER_POLL_SECONDS": "0.2",
            "CALMON_WORKER_HEARTBEAT_SECONDS": "1",
            "CALMON_BOOTSTRAP_REPLICATES": "100",
        }
    )
    log = (tmp_path / "worker.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        stop_process(process)
        log.close()


def wait_for(
    condition: Callable[[], bool], what: str, deadline: float, diagnostics: Callable[[], str]
) -> None:
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}\n{diagnostics()}")


def drop_alerts(prometheus: PrometheusServer, model: str) -> list[dict[str, Any]]:
    return [
        alert
        for alert in prometheus.alerts()
        if alert["labels"]["alertname"] == "CalmonCalibratedMetricDrop"
        and alert["labels"].get("model") == model
    ]


@pytest.mark.parametrize(
    "backend", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
def test_drop_pages_and_prior_drift_does_not(
    database_url: str,
    make_token: Callable[..., str],
    worker: subprocess.Popen[bytes],
    tmp_path: Path,
) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    token = make_token("admin", "ingest", "read")
    with (
        running_server(database_url, log_dir=tmp_path) as server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}
        ) as client,
    ):
        post_stream(client, "degrading", degrade=True, seed=1)
        post_stream(client, "drifting", degrade=False, seed=2)
        with run_prometheus(tmp_path / "prometheus", target=f"127.0.0.1:{server.port}") as prom:
            check_alerts(prom, server, worker, tmp_path / "worker.log", deadline)
            check_dashboard_queries(prom)


def check_alerts(
    prom: PrometheusServer,
    server: LiveServer,
    worker: subprocess.Popen[bytes],
    worker_log: Path,
    deadline: float,
) -> None:
    def diagnostics() -> str:
        verdicts = prom.query('{__name__=~"calmon_window_verdict_.+"} == 1')
        return (
            f"alerts: {prom.alerts()}\n"
            f"verdicts: {verdicts}\n"
            f"dirty: {prom.query('calmon_dirty_windows')}\n"
            f"server log tail:\n{server.logs()[-3000:]}\nprometheus log:\n{prom.log()[-2000:]}"
            f"\nworker log tail:\n{worker_log.read_text(errors='replace')[-3000:]}"
        )

    last_day = TODAY - timedelta(days=1)

    def all_computed() -> bool:
        newest = prom.query("min(calmon_window_start_timestamp_seconds)")
        dirty = prom.query("calmon_dirty_windows")
        return (
            len(prom.query("calmon_window_start_timestamp_seconds")) == 2
            and bool(newest)
            and float(newest[0]["value"][1]) == last_day.timestamp()
            and bool(dirty)
            and float(dirty[0]["value"][1]) == 0
        )

    wait_for(all_computed, "both models' newest window computed", deadline, diagnostics)
    wait_for(
        lambda: any(a["state"] == "firing" for a in drop_alerts(prom, "degrading")),
        "CalmonCalibratedMetricDrop firing for the degrading model",
        deadline,
        diagnostics,
    )
    # The drifting model's verdict is prior_shift: informational, and it held past `for:`.
    wait_for(
        lambda: any(
            a["labels"]["alertname"] == "CalmonPriorShift"
            and a["labels"].get("model") == "drifting"
            and a["state"] == "firing"
            for a in prom.alerts()
        ),
        "CalmonPriorShift firing for the drifting model",
        deadline,
        diagnostics,
    )
    shifts = [a for a in prom.alerts() if a["labels"]["alertname"] == "CalmonPriorShift"]
    assert {a["labels"]["severity"] for a in shifts} == {"info"}
    calibrated = prom.query(
        'calmon_window_metric_value{model="degrading", metric="average_precision",'
        ' variant="calibrated"}'
    )
    assert float(calibrated[0]["value"][1]) < FLOOR
    # Same newest window, same evaluations: no drop alert, not even pending.
    assert drop_alerts(prom, "drifting") == [], diagnostics()
    regular = prom.query(
        'calmon_window_metric_value{model="drifting", metric="average_precision",'
        ' variant="regular"}'
    )
    drifting_calibrated = prom.query(
        'calmon_window_metric_value{model="drifting", metric="average_precision",'
        ' variant="calibrated"}'
    )
    # The prior drift dragged the measured AP down; the calibrated one held above the floor.
    assert float(regular[0]["value"][1]) < float(drifting_calibrated[0]["value"][1])
    assert float(drifting_calibrated[0]["value"][1]) > FLOOR
    prior_effect = prom.query(
        'calmon_window_prior_effect{model="drifting", metric="average_precision"}'
    )
    assert float(prior_effect[0]["value"][1]) < 0
    assert worker.poll() is None, "the worker died"


def check_dashboard_queries(prom: PrometheusServer) -> None:
    """Every Prometheus query of the Grafana dashboard evaluates on the real server."""
    for title, expr in dashboard_promql():
        concrete = (
            expr.replace("$__rate_interval", "1m")
            .replace("$model", "degrading")
            .replace("$segment", "all")
        )
        prom.query(concrete)  # raises on a PromQL error
        assert "$" not in concrete, title
