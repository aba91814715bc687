"""The worker's queue as use cases: claim a dirty window, give a failed one back, record that a
worker is alive. Each is one short transaction of its own, so a lease or a heartbeat is visible
to the other workers (and to the API) as soon as it is written.

Every instant here is the database's (app.db.clock): leases and heartbeats written by one process
are compared with instants read by another. What to do with a failure (retry later or park, how
long to wait) is the worker's policy (app/worker/loop.py); storing the choice is done here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.db.clock import database_now
from app.db.metrics_tables import WorkerHeartbeat
from app.db.repositories.heartbeats import HeartbeatRepository
from app.db.repositories.window_queue import Claim, WindowQueueRepository

__all__ = ["Claim", "WorkerStats", "claim_window", "give_back", "record_heartbeat"]


def claim_window(
    session_factory: sessionmaker[Session], owner: str, lease: timedelta
) -> Claim | None:
    """Lease the oldest claimable window to ``owner`` for ``lease``; None when none waits."""
    with session_factory.begin() as session:
        return WindowQueueRepository(session).claim_next(owner, lease, database_now(session))


def give_back(
    session_factory: sessionmaker[Session],
    claim: Claim,
    owner: str,
    error: str,
    retry_after: timedelta | None,
) -> None:
    """Release a window whose computation failed: claimable again ``retry_after`` from now, or,
    with None, parked at its claimed version until its data or its model's settings move."""
    with session_factory.begin() as session:
        queue = WindowQueueRepository(session)
        if retry_after is None:
            queue.park(claim, owner, error)
        else:
            queue.release_failed(claim, owner, error, database_now(session) + retry_after)


@dataclass
class WorkerStats:
    """A worker's counters since its process started, as its heartbeat row reports them."""

    started_at: datetime | None = None  # by the database's clock, at the first heartbeat
    windows_computed: int = 0
    failures: int = 0
    last_duration_seconds: float | None = None
    rows_read: int = 0
    sketch_recomputations: int = 0


def record_heartbeat(
    session_factory: sessionmaker[Session],
    worker_id: str,
    stats: WorkerStats,
    *,
    alive_for: timedelta,
    stopped: bool,
) -> datetime:
    """Write the worker's heartbeat row: alive until ``alive_for`` from now (by the database's
    clock), stopped now if ``stopped``; returns that now, which is the worker's start on its
    first beat (``stats.started_at`` None)."""
    # WorkerStats' counters are the heartbeat row's columns of the same names.
    counters = {name: value for name, value in asdict(stats).items() if name != "started_at"}
    with session_factory.begin() as session:
        seen = database_now(session)
        HeartbeatRepository(session).beat(
            WorkerHeartbeat(
                worker_id=worker_id,
                started_at=stats.started_at or seen,
                last_seen_at=seen,
                stopped_at=seen if stopped else None,
                alive_until=seen + alive_for,
                **counters,
            )
        )
    return seen
