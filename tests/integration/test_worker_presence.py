"""A worker that stops cleanly says so; one that dies counts dead two of its heartbeat
intervals after its last heartbeat, and one busy with a long window beats on (issue 25); an API
without any worker warns at start."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import WorkerHeartbeat
from app.db.tables import Window
from app.observability.collector import CalmonCollector
from tests.support.databases import Backend
from tests.support.server import calmon_process, running_server, stop_process
from tests.support.waiting import wait_for
from tests.support.worker_data import add_model, insert_rows
from tests.support.worker_process import start_worker

NO_WORKER = {"CALMON_WORKER_EMBEDDED": "false"}


def _beats(sf: sessionmaker[Session]) -> list[WorkerHeartbeat]:
    with sf() as session:
        return list(session.scalars(select(WorkerHeartbeat)))


def _alive_gauge(base_url: str) -> float:
    """The scraped ``calmon_workers_alive`` (the collector caches its reads for 5 s)."""
    scrape = httpx.get(f"{base_url}/metrics").text
    line = next(x for x in scrape.splitlines() if x.startswith("calmon_workers_alive "))
    return float(line.split()[1])


def test_a_worker_stopped_by_sigterm_is_no_longer_counted_alive(
    database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    with (
        running_server(database_url, env=NO_WORKER, log_dir=tmp_path) as server,
        calmon_process(["worker"], database_url) as (worker, _log),
    ):
        wait_for(lambda: _beats(session_factory), "the worker's heartbeat", timeout=30, poll=0.1)
        wait_for(
            lambda: _alive_gauge(server.base_url) == 1, "one worker alive", timeout=15, poll=0.5
        )
        assert stop_process(worker) == 0
        [beat] = _beats(session_factory)
        assert beat.stopped_at is not None
        # Before, the stopped worker counted alive for three lease periods (15 minutes).
        wait_for(
            lambda: _alive_gauge(server.base_url) == 0, "no worker alive", timeout=15, poll=0.5
        )


def test_serve_without_a_worker_warns_at_start_and_not_when_one_runs(
    database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    with running_server(database_url, env=NO_WORKER, log_dir=tmp_path) as alone:
        pass
    assert '"no_worker_heartbeat"' in alone.logs()
    assert "`calmon worker`" in alone.logs()
    with calmon_process(["worker"], database_url):
        wait_for(lambda: _beats(session_factory), "the worker's heartbeat", timeout=30, poll=0.1)
        with running_server(database_url, env=NO_WORKER, log_dir=tmp_path) as served:
            pass
    assert "no_worker_heartbeat" not in served.logs()


# The default lease (300 s): under the former rule a worker counted alive for 15 minutes.
HEARTBEAT_SECONDS = 0.3
QUICK = {
    "CALMON_WORKER_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
    "CALMON_WORKER_POLL_SECONDS": "0.1",
}


def _alive(sf: sessionmaker[Session]) -> float:
    """``calmon_workers_alive`` as the collector reads it now (no scrape cache)."""
    registry = CollectorRegistry()
    registry.register(CalmonCollector(lambda: sf, lease_seconds=300, max_series=100_000))
    value = registry.get_sample_value("calmon_workers_alive")
    assert value is not None
    return value


def test_a_killed_worker_counts_dead_within_two_heartbeat_intervals(
    database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    worker = start_worker(database_url, tmp_path, "doomed", QUICK)
    try:
        wait_for(lambda: _alive(session_factory) == 1, "the worker alive", timeout=30, poll=0.1)
        worker.process.send_signal(signal.SIGKILL)  # dies without a last word
        worker.process.wait()
        killed_at = time.monotonic()
        [beat] = _beats(session_factory)
        time.sleep(2 * HEARTBEAT_SECONDS + 0.2)
        dead = _alive(session_factory)
    finally:
        stop_process(worker.process)
    assert beat.stopped_at is None
    assert beat.alive_until is not None
    assert (beat.alive_until - beat.last_seen_at).total_seconds() == 2 * HEARTBEAT_SECONDS
    assert time.monotonic() - killed_at < 60  # far within the former 15 minutes
    assert dead == 0, worker.logs()[-2000:]


@pytest.mark.postgres
def test_a_worker_busy_with_one_window_for_many_heartbeats_stays_alive(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """The heartbeat has a thread of its own: the loop may be stuck in one window for long."""
    if backend != "postgresql":
        pytest.skip("the window is held up by a row lock, PostgreSQL's")
    model_id = add_model(session_factory)
    scores = np.linspace(0.01, 0.99, 50)
    insert_rows(session_factory, model_id, datetime(2026, 11, 2, tzinfo=UTC), scores, [0, 1] * 25)
    holder = create_engine(database_url)
    worker = start_worker(database_url, tmp_path, "busy", QUICK)
    try:
        with holder.connect() as connection:
            connection.begin()
            # The worker locks its model to store a window (and to claim one): it waits here.
            connection.execute(text(f"SELECT 1 FROM models WHERE id = {model_id} FOR UPDATE"))
            wait_for(lambda: _beats(session_factory), "the worker's heartbeat", timeout=30)
            time.sleep(6 * HEARTBEAT_SECONDS)
            # Several looks, not one: on a loaded machine the heartbeat thread can be late past
            # its 0.6 s vouch at any one moment. Were the beats written by the stuck loop, every
            # look would read 0 (its last beat is 1.8 s old by the first).
            looks = []
            for _ in range(5):
                looks.append(_alive(session_factory))
                time.sleep(0.2)
            busy = max(looks)
            with session_factory() as session:
                computed = session.scalars(select(Window.computed_version)).one()
            connection.rollback()
        wait_for(
            lambda: _window_computed(session_factory), "the window computed", timeout=60, poll=0.2
        )
    finally:
        stop_process(worker.process)
        holder.dispose()
    assert computed == 0  # the loop was held up all along
    assert busy == 1, worker.logs()[-2000:]


def _window_computed(sf: sessionmaker[Session]) -> bool:
    with sf() as session:
        return bool(session.scalars(select(Window.computed_version)).one() > 0)
