"""Leases and heartbeats on the database's clock, not each worker's (issue 16, finding 5).

Real `calmon worker` processes whose clocks are skewed with libfaketime (Debian package
faketime), against PostgreSQL: the database is the one clock every worker and API replica
shares. (SQLite runs inside each process, on one machine's clock, so skew between its workers
does not arise; the test is PostgreSQL's.)
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.db.metrics_tables import WorkerHeartbeat
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import Window
from app.db.types import utcnow
from app.schemas.models import ModelCreate
from app.services.models import add_model
from tests.support.databases import Backend, settings_for
from tests.support.faketime import require_skewable, skewed
from tests.support.server import stop_process
from tests.support.waiting import wait_for
from tests.support.worker_process import start_worker

pytestmark = pytest.mark.postgres

WINDOW = datetime(2026, 11, 2, tzinfo=UTC)


@pytest.fixture
def skewable(backend: Backend) -> None:
    require_skewable(backend)


def _dirty_window(factory: sessionmaker[Session]) -> None:
    with factory.begin() as session:
        model = add_model(session, ModelCreate(name="fraud", threshold=0.5))
        session.add(
            Window(
                model_id=model.id,
                window_start=WINDOW,
                dirty_version=1,
                computed_version=0,
                attempts=0,
                updated_at=utcnow(),
            )
        )


def _heartbeats(factory: sessionmaker[Session]) -> dict[str, datetime]:
    with factory() as session:
        rows = session.execute(select(WorkerHeartbeat.worker_id, WorkerHeartbeat.last_seen_at))
        return {str(worker): seen for worker, seen in rows}


@pytest.mark.usefixtures("skewable")
def test_a_worker_with_a_fast_clock_does_not_steal_a_live_lease(
    database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    _dirty_window(session_factory)
    with session_factory.begin() as session:
        claim = WindowQueueRepository(session).claim_next("healthy", timedelta(minutes=1), utcnow())
    assert claim is not None
    env = {"CALMON_WORKER_LEASE_SECONDS": "60", "CALMON_WORKER_POLL_SECONDS": "0.1"}
    worker = start_worker(database_url, tmp_path, "ahead", {**env, **skewed("+15m")})
    try:
        wait_for(
            lambda: len(_heartbeats(session_factory)) == 1, "the skewed worker to start", timeout=60
        )
        time.sleep(1.5)  # many polls of the skewed worker
    finally:
        stop_process(worker.process)
    with session_factory() as session:
        window = session.scalars(select(Window)).one()
    assert window.lease_owner == "healthy", worker.logs()[-2000:]
    assert window.computed_version == 0


@pytest.mark.usefixtures("skewable")
def test_workers_alive_counts_by_the_database_clock(
    database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    env = {
        "CALMON_WORKER_LEASE_SECONDS": "1",
        "CALMON_WORKER_HEARTBEAT_SECONDS": "0.2",
        "CALMON_WORKER_POLL_SECONDS": "0.1",
    }
    ahead = start_worker(database_url, tmp_path, "ahead", {**env, **skewed("+15m")})
    behind = start_worker(database_url, tmp_path, "behind", {**env, **skewed("-15m")})
    settings = settings_for(database_url, worker_lease_seconds=1)
    try:
        wait_for(lambda: len(_heartbeats(session_factory)) == 2, "both workers to beat", timeout=60)
        ahead.process.send_signal(signal.SIGKILL)  # dies without a last word
        ahead.process.wait()
        with TestClient(create_app(settings)) as client:
            # Waited for, not slept: on a loaded machine the live worker's heartbeat thread can
            # miss its 0.4 s vouch for a moment (CI saw 0 once). By the workers' own clocks the
            # count would stay wrong for 15 minutes, so a wait that ends proves the rule. A
            # count of 1 cannot come from the killed worker alone: the next wait rules it out.
            wait_for(
                lambda: _workers_alive(client) == 1,
                "the live worker alone to count alive",
                timeout=30,
                diagnostics=lambda: str(_heartbeats(session_factory)),
            )
            seen = _heartbeats(session_factory)
            stop_process(behind.process)  # a clean stop: its last beat says it stopped
            # Only the killed worker is left; by its own clock (+15m) it would vouch for itself
            # for 15 minutes. (Waited for: a scrape page is cached for a few seconds.)
            wait_for(
                lambda: _workers_alive(client) == 0,
                "no worker to count alive",
                timeout=30,
                diagnostics=lambda: str(_heartbeats(session_factory)),
            )
    finally:
        stop_process(ahead.process)
        stop_process(behind.process)
    now = utcnow()
    assert all(abs((now - last).total_seconds()) < 60 for last in seen.values()), seen


def _workers_alive(client: TestClient) -> float:
    scrape = client.get("/metrics").text
    return next(
        sample.value
        for family in text_string_to_metric_families(scrape)
        for sample in family.samples
        if sample.name == "calmon_workers_alive"
    )
