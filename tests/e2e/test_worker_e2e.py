"""End to end: real `calmon serve` and `calmon worker` processes, synthetic streams over HTTP.

PostgreSQL runs the production shape (the API without a worker, two `calmon worker` processes);
SQLite runs the one-command start (`calmon serve` with its embedded worker).
"""

from __future__ import annotations

import math
import signal
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from sqlalchemy import Engine, func, select

from app.db.engine import create_db_engine
from app.db.metrics_tables import WorkerHeartbeat
from app.db.tables import Window
from tests.support.databases import Backend, settings_for
from tests.support.server import LiveServer, running_server, stop_process
from tests.support.streams import Day, StreamSpec, batch_body, day_start, post_batch, stream
from tests.support.waiting import wait_for
from tests.support.worker_process import running_workers, start_worker

pytestmark = pytest.mark.e2e

ENV = {
    "CALMON_AUTH_DISABLED": "true",
    "CALMON_WORKER_POLL_SECONDS": "0.2",
    "CALMON_WORKER_HEARTBEAT_SECONDS": "0.5",
    # 200 replicates keep the suite inside its time budget; production default is 1000.
    "CALMON_BOOTSTRAP_REPLICATES": "200",
}
DRIFT = StreamSpec("prior_drift", days=60, rows_per_day=10_000, seed=11)
# About 200 positives a day: enough power to see the drift within three windows.
DEGRADE = StreamSpec("degradation", days=44, rows_per_day=8_000, constant_pi=0.025, seed=12)
BOTH = StreamSpec("both", days=46, rows_per_day=8_000, pi_low=0.01, pi_high=0.04, seed=13)
JUDGED = {"stable", "prior_shift", "performance_drop", "performance_gain", "both"}
DROPS = {"performance_drop", "both"}


def _client(server: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=120.0)


def _register(client: httpx.Client, name: str, **settings: Any) -> None:
    body = {"name": name, "threshold": 1.5, **settings}
    response = client.post("/v1/models", json=body)
    assert response.status_code == 201, response.text


def _settled(client: httpx.Client, models: dict[str, int]) -> bool:
    for name, windows in models.items():
        status = client.get(f"/v1/models/{name}/status").json()
        if status["windows"] != windows or status["dirty_windows"] or status["failing_windows"]:
            assert not status["failing_windows"], status
            return False
    return True


def _series(client: httpx.Client, model: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/models/{model}/metrics", params={"metric": "average_precision"})
    assert response.status_code == 200, response.text
    points: list[dict[str, Any]] = response.json()["points"]
    return points


def _corr(x: list[float], y: list[float]) -> float:
    return float(np.corrcoef(np.asarray(x), np.asarray(y))[0, 1])


def _slope(x: list[float], y: list[float]) -> float:
    return float(np.polyfit(np.asarray(x), np.asarray(y), 1)[0])


def _median_coverage(points: list[dict[str, Any]], variant: str) -> float:
    """Share of windows whose own 95% interval contains the series' median value."""
    median = float(np.median([p[variant] for p in points]))
    inside = [p[f"{variant}_ci"][0] <= median <= p[f"{variant}_ci"][1] for p in points]
    return float(np.mean(inside))


def _check_prior_drift(points: list[dict[str, Any]]) -> None:
    """Regular AP follows pi; calibrated AP stays flat within its intervals; no drop verdict."""
    judged = [p for p in points if p["verdict"] in JUDGED]
    assert len(judged) >= 30, [p["verdict"] for p in points]
    assert not [p for p in points if p["verdict"] in DROPS]
    log_pi = [math.log(p["pi"]) for p in judged]
    regular = [p["regular"] for p in judged]
    calibrated = [p["calibrated"] for p in judged]
    assert _corr(log_pi, regular) > 0.7
    assert abs(_corr(log_pi, calibrated)) < 0.5
    assert abs(_slope(log_pi, calibrated)) < 0.25 * _slope(log_pi, regular)
    # Flat: the calibrated values scatter about as much as their own intervals say.
    assert _median_coverage(judged, "calibrated") >= 0.85
    assert any(p["verdict"] == "prior_shift" for p in judged)


def _check_degradation(points: list[dict[str, Any]], change_day: int) -> None:
    """Quiet before the change; performance_drop within 3 windows after it, and onwards."""
    assert not [p for p in points[:change_day] if p["verdict"] in DROPS]
    first = next(i for i, p in enumerate(points) if p["verdict"] in DROPS)
    assert change_day <= first < change_day + 3
    assert all(p["performance_effect"] < 0 for p in points[change_day + 1 :])


def _check_both(points: list[dict[str, Any]], change_day: int) -> None:
    """After the change both effects are attributed: performance down, prior with pi."""
    after = [p for p in points[change_day + 3 :] if p["verdict"] in JUDGED]
    assert len(after) >= 3
    assert all(p["performance_effect"] < 0 for p in after)
    assert sum(p["verdict"] in DROPS for p in after) >= len(after) - 1
    judged = [p for p in points if p["verdict"] in JUDGED]
    assert _corr([math.log(p["pi"]) for p in judged], [p["prior_effect"] for p in judged]) > 0.5
    assert any(p["verdict"] == "both" for p in after)


def _days(spec: StreamSpec) -> list[Day]:
    return list(stream(spec))


def _only(backend: Backend, wanted: Backend, why: str) -> None:
    if backend != wanted:
        pytest.skip(why)


def test_streams_with_two_worker_processes(
    backend: Backend, database_url: str, tmp_path: Path
) -> None:
    """Production shape on PostgreSQL: the API without a worker, two `calmon worker` processes."""
    _only(backend, "postgresql", "several worker processes need PostgreSQL (see the SQLite test)")
    streams = {"drift": _days(DRIFT), "degrade": _days(DEGRADE), "both": _days(BOTH)}
    env = {**ENV, "CALMON_WORKER_EMBEDDED": "false"}
    with (
        running_server(database_url, env=env, log_dir=tmp_path) as server,
        running_workers(database_url, tmp_path, 2, ENV),
        _client(server) as client,
    ):
        for name in streams:
            _register(client, name)
        _register(client, "late", min_label_coverage=0.9, pi0={"policy": "fixed", "value": 0.05})
        # Interleaved by day, as live traffic arrives.
        for index in range(max(len(days) for days in streams.values())):
            for name, days in streams.items():
                if index < len(days):
                    post_batch(client, name, batch_body(days[index], prefix=name))
        late_ids = _post_late_model(client)
        windows = {name: len(days) for name, days in streams.items()} | {"late": 3}
        wait_for(lambda: _settled(client, windows), "every window computed", timeout=240)

        _check_prior_drift(_series(client, "drift"))
        _check_degradation(_series(client, "degrade"), DEGRADE.change_day)
        _check_both(_series(client, "both"), BOTH.change_day)

        before = _series(client, "late")
        assert before[1]["label_coverage"] == pytest.approx(0.5)
        assert before[1]["verdict"] == "insufficient_data"
        response = client.post("/v1/models/late/labels", json={"labels": late_ids})
        assert response.status_code == 200, response.text
        wait_for(
            lambda: _series(client, "late")[1]["label_coverage"] == 1.0,
            "late labels computed",
            timeout=60,
        )
        after = _series(client, "late")
        assert after[1]["n"] == 3_000
        assert [p["window_start"] for p in after] == [p["window_start"] for p in before]
        assert after[0] == before[0]
        assert after[2] == before[2]
        drift_pi0 = client.get("/v1/models/drift/pi0").json()
        assert len(drift_pi0["versions"]) > 1  # the historical pi0 moved as history grew

        # Every window was read once from raw rows (the relabelled one twice); every pi0 move
        # was recomputed from sketches without reading a row again.
        rows_posted = sum(d.scores.size for days in streams.values() for d in days) + 3 * 3_000
        engine = create_db_engine(settings_for(database_url))
        try:
            wait_for(
                lambda: _heartbeat_totals(engine)[0] == rows_posted + 3_000,
                "heartbeats counting every row read",
                timeout=10,
            )
            _, recomputed, computed, workers = _heartbeat_totals(engine)
            with engine.connect() as connection:
                versions = connection.execute(select(func.sum(Window.computed_version))).scalar()
        finally:
            engine.dispose()
    assert recomputed > 0
    assert computed == versions  # each window version computed once, by one worker
    assert workers == 2  # both workers took a share


def _heartbeat_totals(engine: Engine) -> tuple[int, int, int, int]:
    with engine.connect() as connection:
        beats = connection.execute(select(WorkerHeartbeat)).all()
    return (
        sum(b.rows_read for b in beats),
        sum(b.sketch_recomputations for b in beats),
        sum(b.windows_computed for b in beats),
        sum(1 for b in beats if b.windows_computed > 0),
    )


def _post_late_model(client: httpx.Client) -> list[dict[str, Any]]:
    """Three days for model "late"; half of day 1's labels are held back and returned."""
    rng = np.random.default_rng(21)
    held: list[dict[str, Any]] = []
    for index in range(3):
        scores = rng.normal(0.0, 1.0, 3_000)
        labels = (rng.random(3_000) < 0.05).astype(int)
        scores[labels == 1] += 2.0
        day = Day(index, day_start(index), 0.05, 2.0, scores, labels.astype(np.int8))
        body = batch_body(day, prefix="late")
        if index == 1:
            column: list[Any] = body["columns"]["label"]
            for i in range(0, 3_000, 2):
                held.append({"id": body["columns"]["id"][i], "label": column[i]})
                column[i] = None
        post_batch(client, "late", body)
    return held


def test_sigkill_mid_window_then_another_worker_finishes_it(
    backend: Backend, database_url: str, tmp_path: Path
) -> None:
    _only(backend, "postgresql", "several worker processes need PostgreSQL")
    env = {**ENV, "CALMON_WORKER_LEASE_SECONDS": "3", "CALMON_BOOTSTRAP_REPLICATES": "1000"}
    engine = create_db_engine(settings_for(database_url))

    def window() -> Any:
        with engine.connect() as connection:
            return connection.execute(
                select(
                    Window.lease_owner,
                    Window.dirty_version,
                    Window.computed_version,
                    Window.attempts,
                )
            ).first()

    try:
        with (
            running_server(
                database_url, env={**env, "CALMON_WORKER_EMBEDDED": "false"}, log_dir=tmp_path
            ) as server,
            _client(server) as client,
        ):
            _register(client, "big", pi0={"policy": "fixed", "value": 0.01})
            spec = StreamSpec("degradation", days=1, rows_per_day=210_000, constant_pi=0.01)
            day = _days(spec)[0]
            for part, segment in enumerate(("a", "b", "c")):
                sub = Day(0, day.window_start, 0.01, 2.0, day.scores[part::3], day.labels[part::3])
                post_batch(client, "big", batch_body(sub, prefix=f"big{part}", segment=segment))
            victim = start_worker(database_url, tmp_path, "victim", env)
            wait_for(
                lambda: (w := window()) is not None and w.lease_owner is not None,
                "the first worker's claim",
                timeout=60,
                poll=0.005,
            )
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait()
            claimed = window()
            assert claimed is not None
            assert claimed.computed_version == 0, "the window finished before the kill"
            heir = start_worker(database_url, tmp_path, "heir", env)
            try:
                wait_for(
                    lambda: (w := window()) is not None and w.computed_version == w.dirty_version,
                    "the second worker to finish the window",
                    timeout=90,
                )
                finished = window()
                assert finished is not None
                assert finished.lease_owner is None
                assert finished.attempts == 0
                # SIGTERM: finish what is in hand, exit cleanly.
                assert stop_process(heir.process) == 0, heir.logs()
            finally:
                stop_process(heir.process)
            status = client.get("/v1/models/big/status").json()
            assert status["dirty_windows"] == 0
            detail = client.get(f"/v1/models/big/windows/{day.window_start.isoformat()}").json()
            assert detail["segments"] == ["a", "all", "b", "c"]
            assert detail["rows_total"] == 210_000
    finally:
        engine.dispose()


def test_one_command_start_on_sqlite_computes_metrics(
    backend: Backend, database_url: str, tmp_path: Path
) -> None:
    """`calmon serve` alone on SQLite: its embedded worker turns posted days into verdicts."""
    _only(backend, "sqlite", "the embedded worker is the SQLite default")
    with (
        running_server(database_url, env=ENV, log_dir=tmp_path) as server,
        _client(server) as client,
    ):
        _register(client, "degrade")
        days = _days(DEGRADE)
        for day in days:
            post_batch(client, "degrade", batch_body(day, prefix="d"))
        wait_for(
            lambda: _settled(client, {"degrade": len(days)}), "every window computed", timeout=120
        )
        _check_degradation(_series(client, "degrade"), DEGRADE.change_day)
        wait_for(
            lambda: (
                client.get("/v1/models/degrade/status").json()["workers"][0]["windows_computed"]
                >= len(days)
            ),
            "the embedded worker's heartbeat",
            timeout=10,
        )
        # SIGTERM stops the API and, before the engine goes, its worker thread.
        stop_process(server.process)
        assert '"event": "worker_stopped"' in server.logs()
