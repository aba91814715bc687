"""Running the worker: as its own process (`calmon worker`) or beside the API (embedded).

The standalone process finishes the window in progress on SIGTERM/SIGINT and exits 0. The
embedded worker is a daemon thread started by the API's lifespan and stopped (joined) before the
engine is disposed; it is the default on the embedded SQLite database so that the one-command
start computes metrics without a second process.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from types import FrameType

from fastapi import FastAPI
from sqlalchemy.orm import Session, sessionmaker

from app.db.clock import database_now
from app.db.engine import create_db_engine, create_session_factory
from app.settings import Settings
from app.windows.compute import ComputeOptions
from app.worker.loop import Worker, WorkerConfig

logger = logging.getLogger("calmon.worker")


def worker_config(settings: Settings) -> WorkerConfig:
    """The worker's behaviour from the service settings."""
    return WorkerConfig(
        lease=timedelta(seconds=settings.worker_lease_seconds),
        poll_interval=settings.worker_poll_seconds,
        heartbeat_interval=settings.worker_heartbeat_seconds,
        backoff_base=settings.worker_retry_seconds,
        options=ComputeOptions(replicates=settings.bootstrap_replicates),
    )


def run_worker_process(settings: Settings) -> int:
    """`calmon worker`: claim and compute windows until SIGTERM or SIGINT."""
    engine = create_db_engine(settings)
    try:
        worker = Worker(create_session_factory(engine), worker_config(settings))

        def _stop(signum: int, _frame: FrameType | None) -> None:
            logger.info("worker_stopping", extra={"signal": signal.Signals(signum).name})
            worker.stop()

        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        worker.run()
    finally:
        engine.dispose()
    return 0


def missing_worker_hook(
    settings: Settings,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """A lifespan hook for an API that runs no worker: warn at start when no worker is alive.

    Without a worker, batches are stored but no window is ever computed, and nothing else
    would say why the metrics stay empty.
    """

    @asynccontextmanager
    async def hook(app: FastAPI) -> AsyncIterator[None]:
        factory: sessionmaker[Session] = app.state.session_factory
        alive = await asyncio.to_thread(_alive_workers, factory, settings)
        if alive == 0:
            logger.warning(
                "no_worker_heartbeat",
                extra={
                    "hint": "no calmon worker is alive and the embedded worker is off "
                    "(CALMON_WORKER_EMBEDDED=false): windows are stored but not computed "
                    "until `calmon worker` runs against this database"
                },
            )
        yield

    return hook


def _alive_workers(factory: sessionmaker[Session], settings: Settings) -> int:
    # Imported here: the collector's repository pulls in the metrics vocabulary.
    from app.observability.snapshot import worker_totals  # noqa: PLC0415

    try:
        with factory() as session:
            # Heartbeats are written by the database's clock; judged by it too (app.db.clock).
            now = database_now(session)
            lease = settings.worker_lease_seconds
            return worker_totals(session, now=now, lease_seconds=lease).alive
    except Exception:
        # An unmigrated or unreachable database is /readyz's to report; do not stop the API.
        logger.exception("worker_presence_check_failed")
        return -1


def embedded_worker_hook(
    settings: Settings,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """A lifespan hook for ``create_app`` that runs a worker thread beside the API."""

    @asynccontextmanager
    async def hook(app: FastAPI) -> AsyncIterator[None]:
        factory: sessionmaker[Session] = app.state.session_factory
        worker = Worker(factory, worker_config(settings))
        thread = threading.Thread(target=worker.run, name="calmon-worker", daemon=True)
        thread.start()
        app.state.worker = worker
        try:
            yield
        finally:
            worker.stop()
            # Join off the event loop: the worker finishes its current window first.
            await asyncio.to_thread(thread.join)

    return hook
