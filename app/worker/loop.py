"""The claim loop: lease a dirty window, compute it, store it, repeat; heartbeats on the side.

The loop is an adapter: it calls use cases only (app.windows.queue to claim, give back and beat,
app.windows.compute to compute, app.services for purges and retention) and imports no
repository. It hands each one the session factory, and each use case commits its own
transactions (STYLE convention 3): a short one to claim, one to read the window's rows, one to
store the results together with the completion mark. Lease expiries, back-offs and heartbeats are
written by the database's clock (app.db.clock), the one every worker and the API compare them with.

What the loop decides is the worker's policy: when a failure is retried (with a back-off) or
parked, how often to beat. A stop request (SIGTERM) is honoured between windows, so the window in
progress is finished, never half-written.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.services.models import purge_predictions
from app.services.retention import create_coming_weeks_tables, expire_predictions
from app.windows.compute import ComputeOptions, LeaseLostError, compute_claim
from app.windows.queue import Claim, WorkerStats, claim_window, give_back, record_heartbeat

logger = logging.getLogger("calmon.worker")
# Seconds between two checks that this and next week's tables exist (PostgreSQL).
WEEKS_INTERVAL = 600.0
PARK_AFTER_ATTEMPTS = 3
"""Failures in a row, for a reason that retrying cannot change, after which a window is parked
until its data or its model's settings change."""
ALIVE_HEARTBEATS = 2
"""Heartbeat intervals after its last heartbeat that a worker still counts alive: one missed
beat (a slow commit, a busy database) is not a death, two are."""


def is_deterministic(exc: Exception) -> bool:
    """Whether ``exc`` says the window's data or settings cannot be computed with (the domain
    refusing its input, arithmetic out of range), as opposed to the database or the lease:
    those pass, the data does not change by being retried."""
    return isinstance(exc, ValueError | ArithmeticError)


def new_worker_id() -> str:
    """Host, pid and a random suffix: unique across restarts, readable in the windows table."""
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class WorkerConfig:
    """How one worker process behaves (from Settings; tests shorten the times)."""

    worker_id: str = field(default_factory=new_worker_id)
    lease: timedelta = timedelta(minutes=5)
    poll_interval: float = 1.0
    heartbeat_interval: float = 5.0
    backoff_base: float = 5.0
    backoff_max: float = 600.0
    options: ComputeOptions = field(default_factory=ComputeOptions)
    # Rows deleted per transaction (purge, retention): 0.9 s each here (bench/delete_model.py).
    purge_chunk_rows: int = 50_000


class Worker:
    """One worker: ``run()`` until ``stop()``; ``run_once()`` for a single window."""

    def __init__(self, session_factory: sessionmaker[Session], config: WorkerConfig) -> None:
        self.session_factory = session_factory
        self.config = config
        self.stats = WorkerStats()
        self._stopping = threading.Event()
        self._last_beat = 0.0
        self._last_weeks = -WEEKS_INTERVAL

    @property
    def worker_id(self) -> str:
        """This worker's lease owner name."""
        return self.config.worker_id

    def stop(self) -> None:
        """Ask the loop to exit after the window in progress (safe from a signal handler)."""
        self._stopping.set()

    def run(self) -> None:
        """Process windows until stopped; sleep ``poll_interval`` whenever none is dirty.

        Heartbeats are written by a thread of their own, every ``heartbeat_interval`` even while
        one window takes minutes: a worker counts dead two intervals after its last one.
        """
        logger.info("worker_started", extra={"worker_id": self.worker_id})
        self.heartbeat(force=True)
        beats = threading.Thread(target=self._beat, name="calmon-heartbeat", daemon=True)
        beats.start()
        try:
            while not self._stopping.is_set():
                try:
                    worked = self.run_once()
                    worked = self.purge_once() or worked
                    worked = self.expire_once() or worked
                    self.prepare_weeks()
                except Exception:
                    # A database outage must not kill the process: log, wait, try again.
                    logger.exception("worker_loop_error", extra={"worker_id": self.worker_id})
                    worked = False
                if not worked:
                    self._stopping.wait(self.config.poll_interval)
        finally:
            self._stopping.set()
            # Joined first: a late beat of the thread must not overwrite the stopped one.
            beats.join()
        self.heartbeat(force=True, stopped=True)
        logger.info("worker_stopped", extra={"worker_id": self.worker_id})

    def _beat(self) -> None:
        while not self._stopping.wait(self.config.heartbeat_interval):
            self.heartbeat(force=True)

    def run_once(self) -> bool:
        """Claim and process one window; False when nothing was claimable."""
        claim = self._claim()
        if claim is None:
            return False
        self._process(claim)
        return True

    def purge_once(self) -> bool:
        """Remove one chunk of a deleted model's predictions; False when none is left."""
        deleted = purge_predictions(self.session_factory, self.config.purge_chunk_rows)
        if deleted:
            logger.info("predictions_purged", extra={"worker_id": self.worker_id, "rows": deleted})
        return deleted > 0

    def prepare_weeks(self, force: bool = False) -> None:
        """Create this and next week's tables of every model ahead of their first batch
        (PostgreSQL), at most every ``WEEKS_INTERVAL`` seconds."""
        if not force and time.monotonic() - self._last_weeks < WEEKS_INTERVAL:
            return
        create_coming_weeks_tables(self.session_factory)
        self._last_weeks = time.monotonic()

    def expire_once(self) -> bool:
        """Delete one chunk of predictions older than their model's retention; False when none
        has expired."""
        deleted = expire_predictions(self.session_factory, self.config.purge_chunk_rows)
        if deleted:
            logger.info("predictions_expired", extra={"worker_id": self.worker_id, "rows": deleted})
        return deleted > 0

    def drain(self, max_windows: int = 100_000) -> int:
        """Process windows until none is claimable (tests, benchmarks); returns how many."""
        done = 0
        while done < max_windows and self.run_once():
            done += 1
        self.heartbeat(force=True)
        return done

    def _claim(self) -> Claim | None:
        return claim_window(self.session_factory, self.worker_id, self.config.lease)

    def _process(self, claim: Claim) -> None:
        started = time.perf_counter()
        try:
            outcome = compute_claim(
                self.session_factory, claim, self.worker_id, self.config.options
            )
        except LeaseLostError:
            logger.warning("lease_lost", extra=_claim_fields(claim, self.worker_id))
            return
        except Exception as exc:
            self._fail(claim, exc)
            return
        duration = time.perf_counter() - started
        self.stats.windows_computed += 1
        self.stats.last_duration_seconds = duration
        self.stats.rows_read += outcome.rows_read
        self.stats.sketch_recomputations += outcome.sketch_recomputations
        logger.info(
            "window_computed",
            extra={
                **_claim_fields(claim, self.worker_id),
                "duration_seconds": round(duration, 4),
                "segments": outcome.segments,
                "pi0_version": outcome.pi0_version,
                "series_recomputed": outcome.sketch_recomputations,
            },
        )

    def _fail(self, claim: Claim, exc: Exception) -> None:
        self.stats.failures += 1
        delay = min(
            self.config.backoff_base * 2 ** max(claim.attempts - 1, 0), self.config.backoff_max
        )
        error = "".join(traceback.format_exception_only(exc)).strip()
        park = is_deterministic(exc) and claim.attempts >= PARK_AFTER_ATTEMPTS
        logger.error(
            "window_parked" if park else "window_failed",
            exc_info=exc,
            extra={
                **_claim_fields(claim, self.worker_id),
                **({"parked": True} if park else {"retry_in_seconds": delay}),
            },
        )
        try:
            retry_after = None if park else timedelta(seconds=delay)
            give_back(self.session_factory, claim, self.worker_id, error, retry_after)
        except Exception:
            # The lease will expire on its own; the window is not lost.
            logger.exception("release_failed_error", extra=_claim_fields(claim, self.worker_id))

    def heartbeat(self, *, force: bool = False, stopped: bool = False) -> None:
        """Write this worker's counters, at most every ``heartbeat_interval`` unless forced;
        ``stopped`` marks the last one, written when the loop exits."""
        now = time.monotonic()
        if not force and now - self._last_beat < self.config.heartbeat_interval:
            return
        self._last_beat = now
        vouched = timedelta(seconds=ALIVE_HEARTBEATS * self.config.heartbeat_interval)
        try:
            seen = record_heartbeat(
                self.session_factory, self.worker_id, self.stats, alive_for=vouched, stopped=stopped
            )
        except Exception:
            logger.exception("heartbeat_failed", extra={"worker_id": self.worker_id})
            return
        if self.stats.started_at is None:
            self.stats.started_at = seen


def _claim_fields(claim: Claim, worker_id: str) -> dict[str, object]:
    return {
        "worker_id": worker_id,
        "model_id": claim.model_id,
        "window_start": claim.window_start.isoformat(),
        "version": claim.dirty_version,
        "attempt": claim.attempts,
    }
