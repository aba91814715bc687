"""calmon serve + calmon worker + the real Prometheus with the project's alert rules, under late
labels.

Two models receive 80 days of daily predictions over HTTP, each row with the label calmon would
know today: a fraud's label arrives 7 to 28 days after the transaction, a legitimate row is
confirmed 45 days after it. So only the oldest 36 windows are mature; the 44 newest hold a few
chargebacks and nothing else, as in a real deployment.

* "degrading" keeps its fraud rate and degrades gradually from day 15: the positives' scores
  slide down over 12 days until calibrated AP is 60% lower, and stay there. The drop alert must
  fire (the detector's and the floor's), resting on the newest *mature* window.
* "drifting" keeps its model while its fraud rate trends up 4x, cycles weekly and jumps 4x for a
  four-day attack (the newest mature days): the drop alert must stay silent (not even pending),
  the prior shift informs, and the newest window's nowcast (its fraud rate from its scores alone)
  raises no score shift.

Then one more day of legitimate labels arrives: window 36 matures, is judged, and the alert moves
on to rest on it. Prometheus scrapes calmon's /metrics and evaluates config/prometheus/rules
(with `for:` shortened). PostgreSQL only: it is the deployment this mirrors (API and worker as
separate processes).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from bench.simulation import HEALTHY_MU, mu_for
from tests.support.prometheus import PrometheusServer, run_prometheus
from tests.support.server import LiveServer, running_server
from tests.support.shipped_config import dashboard_promql
from tests.support.waiting import wait_for
from tests.support.worker_process import WorkerProcess, running_workers

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DAYS = 80
ROWS_PER_DAY = 3_000
THRESHOLD = 2.0
FLOOR = 0.45  # calibrated AP ~0.63 when healthy, ~0.26 after the drop (pi0 ~ 0.03)
CONFIRMED_AFTER = 45  # days until a legitimate transaction is confirmed
MATURE = DAYS - CONFIRMED_AFTER + 1  # windows 0 .. MATURE - 1 are mature today
DEADLINE_SECONDS = 240
UNJUDGED = 'calmon_window_verdict="insufficient_data"'
SHIFTED = 'calmon_window_verdict="score_shift"'

# Today at UTC midnight: the stream's last day is yesterday, so its windows look current.
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def start_of(day: int) -> datetime:
    """Window ``day`` of the stream (day DAYS is today)."""
    return TODAY - timedelta(days=DAYS - day)


def degrading_mu(day: int) -> float:
    """Healthy until day 15, then a linear slide to calibrated AP -60% by day 27."""
    low = mu_for(0.4, pi0=0.03)
    share = min(max(day - 14, 0) / 12, 1.0)
    return float(HEALTHY_MU + share * (low - HEALTHY_MU))


def drifting_pi(day: int) -> float:
    """A 4x upward trend, a weekly cycle and a four-day 4x attack; the model never changes."""
    attack = 4.0 if 32 <= day < 36 else 1.0  # the last mature days: the alert rests on them
    trend = 0.015 * math.pow(2.0, day / 40)
    return trend * (1.0 + 0.5 * math.sin(2 * math.pi * day / 7)) * attack


def day_rows(
    rng: np.random.Generator, day: int, pi: float, mu: float, *, known_today: int
) -> tuple[dict[str, Any], list[str]]:
    """One day of columnar rows with the labels known on day ``known_today`` (frauds whose
    chargeback already came, legitimate rows once confirmed; the rest ``null``), and the ids of
    its legitimate rows."""
    labels = rng.random(ROWS_PER_DAY) < pi
    scores = rng.normal(0.0, 1.0, ROWS_PER_DAY) + mu * labels
    chargeback = day + rng.integers(7, 29, ROWS_PER_DAY)
    confirmed = day + CONFIRMED_AFTER <= known_today
    known = np.where(labels, chargeback <= known_today, confirmed)
    start = start_of(day)
    step = 86_400 / ROWS_PER_DAY
    ids = [f"{day}-{i}" for i in range(ROWS_PER_DAY)]
    columns = {
        "id": ids,
        "timestamp": [(start + timedelta(seconds=i * step)).isoformat() for i in range(len(ids))],
        "score": scores.round(6).tolist(),
        "label": [int(y) if k else None for y, k in zip(labels, known, strict=True)],
    }
    return columns, [i for i, y in zip(ids, labels, strict=True) if not y]


def post_stream(client: httpx.Client, model: str, *, degrade: bool, seed: int) -> list[str]:
    """Register ``model`` and post its 80 days; returns the ids of day MATURE's legitimate
    rows (confirmed tomorrow)."""
    spec = {"name": model, "threshold": THRESHOLD, "alert_floor": FLOOR}
    assert client.post("/v1/models", json=spec).status_code == 201
    rng = np.random.default_rng(seed)
    tomorrow: list[str] = []
    for day in range(DAYS):
        pi = 0.03 if degrade else drifting_pi(day)
        mu = degrading_mu(day) if degrade else HEALTHY_MU
        columns, legitimate = day_rows(rng, day, pi, mu, known_today=DAYS)
        if day == MATURE:
            tomorrow = legitimate
        body = {"batch_id": f"day-{day}", "columns": columns}
        response = client.post(f"/v1/models/{model}/batches", json=body, timeout=60)
        assert response.status_code == 201, response.text
    return tomorrow


@pytest.fixture
def worker(database_url: str, tmp_path: Path) -> Iterator[WorkerProcess]:
    """A real `calmon worker` process on the test database."""
    env = {
        "CALMON_WORKER_POLL_SECONDS": "0.2",
        "CALMON_WORKER_HEARTBEAT_SECONDS": "1",
        "CALMON_BOOTSTRAP_REPLICATES": "100",
    }
    with running_workers(database_url, tmp_path, 1, env) as (process,):
        yield process


def drop_alerts(prometheus: PrometheusServer, model: str) -> list[dict[str, Any]]:
    return [
        alert
        for alert in prometheus.alerts()
        if alert["labels"]["alertname"] == "CalmonCalibratedMetricDrop"
        and alert["labels"].get("model") == model
    ]


def firing(prometheus: PrometheusServer, model: str, alertname: str, **labels: str) -> bool:
    return any(
        a["labels"]["alertname"] == alertname
        and a["labels"].get("model") == model
        and all(a["labels"].get(k) == v for k, v in labels.items())
        and a["state"] == "firing"
        for a in prometheus.alerts()
    )


def value(prometheus: PrometheusServer, expr: str) -> float:
    found = prometheus.query(expr)
    assert found, expr
    return float(found[0]["value"][1])


@pytest.mark.parametrize(
    "backend", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
def test_a_gradual_drop_pages_under_late_labels_and_prior_drift_does_not(
    database_url: str,
    make_token: Callable[..., str],
    worker: WorkerProcess,
    tmp_path: Path,
) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    token = make_token("admin", "ingest", "read")
    scrape = "scrape-token-of-the-e2e-test"  # as the compose file deploys it: /metrics guarded
    with (
        running_server(
            database_url, env={"CALMON_METRICS_TOKEN": scrape}, log_dir=tmp_path
        ) as server,
        httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}
        ) as client,
    ):
        tomorrow = post_stream(client, "degrading", degrade=True, seed=1)
        post_stream(client, "drifting", degrade=False, seed=2)
        assert httpx.get(f"{server.base_url}/metrics").status_code == 401
        with run_prometheus(
            tmp_path / "prometheus", target=f"127.0.0.1:{server.port}", scrape_token=scrape
        ) as prom:
            check_alerts(
                prom,
                client,
                server,
                worker=worker,
                deadline=deadline,
            )
            check_one_more_day_matures(prom, client, tomorrow, deadline)
            check_dashboard_queries(prom)
        assert worker.process.poll() is None, "the worker died"


def check_alerts(
    prom: PrometheusServer,
    client: httpx.Client,
    server: LiveServer,
    *,
    worker: WorkerProcess,
    deadline: float,
) -> None:
    def diagnostics() -> str:
        return (
            f"alerts: {prom.alerts()}\n"
            f"states: {prom.query('calmon_alert_state == 1')}\n"
            f"evidence: {prom.query('calmon_alert_drop_evidence')}\n"
            f"api: {client.get('/v1/models/degrading/alerts').text[:3000]}\n"
            f"server log tail:\n{server.logs()[-3000:]}\nprometheus log:\n{prom.log()[-2000:]}"
            f"\nworker log tail:\n{worker.logs()[-3000:]}"
        )

    newest_mature = start_of(MATURE - 1).timestamp()

    def judged_up_to_the_newest_mature_window() -> bool:
        found = prom.query("calmon_alert_window_start_timestamp_seconds")
        dirty = prom.query("calmon_dirty_windows")
        return (
            len(found) == 2
            and all(float(f["value"][1]) == newest_mature for f in found)
            and bool(dirty)
            and float(dirty[0]["value"][1]) == 0
        )

    wait_for(
        judged_up_to_the_newest_mature_window,
        "both models judged",
        timeout=deadline - time.monotonic(),
        poll=0.5,
        diagnostics=diagnostics,
    )
    for trigger in ("cusum", "floor"):

        def paging(trigger: str = trigger) -> bool:
            return firing(prom, "degrading", "CalmonCalibratedMetricDrop", trigger=trigger)

        wait_for(
            paging,
            f"CalmonCalibratedMetricDrop{{trigger={trigger}}} firing for the degrading model",
            timeout=deadline - time.monotonic(),
            poll=0.5,
            diagnostics=diagnostics,
        )
    wait_for(
        lambda: firing(prom, "drifting", "CalmonPriorShift"),
        "CalmonPriorShift firing for the drifting model",
        timeout=deadline - time.monotonic(),
        poll=0.5,
        diagnostics=diagnostics,
    )
    # The newest window is immature for both (a few chargebacks, no confirmations): the alert
    # state rests on the newest mature window, and 44 windows still wait for their labels.
    for model in ("degrading", "drifting"):
        assert value(prom, f'calmon_windows_awaiting_labels{{model="{model}"}}') == DAYS - MATURE
    # Provisional verdicts: the drifting model's newest window waits for labels; the degrading
    # model's may be a score shift (its frauds score lower, which scores alone can show).
    assert value(prom, f'calmon_window_verdict{{model="drifting", {UNJUDGED}}}') == 1
    degrading = [
        value(prom, f'calmon_window_verdict{{model="degrading", {state}}}')
        for state in (UNJUDGED, SHIFTED)
    ]
    assert sorted(degrading) == [0, 1]
    assert value(prom, 'calmon_alert_state{model="degrading", calmon_alert_state="drop"}') == 1
    assert value(prom, 'calmon_alert_state{model="drifting", calmon_alert_state="ok"}') == 1
    # Same windows, same evaluations: no drop alert for the drifting model, not even pending.
    assert drop_alerts(prom, "drifting") == [], diagnostics()
    shifts = [a for a in prom.alerts() if a["labels"]["alertname"] == "CalmonPriorShift"]
    assert {a["labels"]["severity"] for a in shifts} == {"info"}
    check_nowcast(prom, client)
    assert worker.process.poll() is None, "the worker died"

    alerts = client.get("/v1/models/degrading/alerts").json()
    whole = alerts["segments"][0]
    assert whole["state"] == "drop"
    assert set(whole["signals"]) == {"cusum", "floor"}
    # The episode started inside the slide, after the reference and before the last mature day.
    episode = datetime.fromisoformat(whole["episode_start"])
    assert start_of(15) < episode <= start_of(MATURE - 1), whole
    series = client.get("/v1/models/degrading/metrics").json()["points"]
    verdicts = [p["verdict"] for p in series]
    assert verdicts[:14] == ["reference"] * 14
    assert "performance_drop" not in verdicts[:15]
    first = verdicts.index("performance_drop")
    assert set(verdicts[first:MATURE]) == {"performance_drop"}, verdicts  # and it stays
    # Never judged while immature. From its scores alone, some immature windows of the degraded
    # model are a score shift (its frauds score lower: ~90 frauds a window catch it in about one
    # window in five, measured), and every estimate is marked as one.
    assert set(verdicts[MATURE:]) <= {"insufficient_data", "score_shift"}
    assert "score_shift" in verdicts[MATURE:]
    assert not any(p["judged"] for p in series[MATURE:])
    newest = client.get(f"/v1/models/degrading/windows/{series[-1]['window_start']}").json()
    assert newest["verdict_reason"].startswith(("score shift", "waiting for labels"))


def check_nowcast(prom: PrometheusServer, client: httpx.Client) -> None:
    """Before the labels: the drifting model's newest window (no confirmations yet) has its
    fraud rate estimated from its scores, and its scores are no score shift (only the fraud rate
    moved), so CalmonScoreShift stays silent for it."""
    newest = start_of(DAYS - 1).timestamp()
    drifting = '{model="drifting", segment="all"}'
    assert value(prom, f"calmon_nowcast_window_start_timestamp_seconds{drifting}") == newest
    assert value(prom, f"calmon_nowcast_score_shift{drifting}") == 0
    scoring = [
        a
        for a in prom.alerts()
        if a["labels"]["alertname"] == "CalmonScoreShift" and a["labels"]["model"] == "drifting"
    ]
    assert scoring == []
    low = value(prom, f"calmon_nowcast_positive_ratio_ci_lower{drifting}")
    high = value(prom, f"calmon_nowcast_positive_ratio_ci_upper{drifting}")
    truth = drifting_pi(DAYS - 1)  # the day's expected rate; its realised one varies ~8% more
    assert low - (high - low) <= truth <= high + (high - low), (low, truth, high)
    points = client.get("/v1/models/drifting/metrics?metric=precision").json()["points"]
    estimated = [p for p in points if p["nowcast"] is not None]
    assert len(estimated) == DAYS - 14  # every window after the 14-window reference
    assert all(p["nowcast"]["estimate"] for p in estimated)


def check_one_more_day_matures(
    prom: PrometheusServer, client: httpx.Client, tomorrow: list[str], deadline: float
) -> None:
    """The next day's confirmations arrive: that window matures, is judged, and the alert now
    rests on it (still paging: the drop lasts)."""
    labels = [{"id": i, "label": 0} for i in tomorrow]
    response = client.post("/v1/models/degrading/labels", json={"labels": labels})
    assert response.status_code == 200, response.text
    moved = start_of(MATURE).timestamp()

    def judged() -> bool:
        found = prom.query('calmon_alert_window_start_timestamp_seconds{model="degrading"}')
        return bool(found) and float(found[0]["value"][1]) == moved

    wait_for(
        judged,
        "window MATURE judged",
        timeout=deadline - time.monotonic(),
        poll=0.5,
        diagnostics=lambda: str(prom.alerts()),
    )
    assert firing(prom, "degrading", "CalmonCalibratedMetricDrop", trigger="cusum")
    point = client.get(
        "/v1/models/degrading/windows/" + start_of(MATURE).isoformat().replace("+00:00", "Z")
    ).json()
    assert point["verdict"] == "performance_drop"
    assert point["evidence"]["signals"][0] == "cusum"


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
