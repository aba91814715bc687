"""A worker that stops cleanly says so; an API without any worker warns at start."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import WorkerHeartbeat
from tests.support.server import calmon_process, running_server, stop_process
from tests.support.waiting import wait_for

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
