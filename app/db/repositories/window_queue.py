"""SQL of the worker's queue: dirty windows, claimed under a lease.

A window is dirty while ``dirty_version > computed_version``. A worker claims one by writing its
id and a lease expiry in a short transaction of its own, computes outside it, and then stores the
result and ``computed_version = <the dirty_version it claimed>`` in one transaction that first
re-checks it still owns the lease. So:

- ingest that re-dirties a window during the computation bumps ``dirty_version`` past the claimed
  one, and the window stays dirty and is computed again;
- a worker that died keeps nothing: its lease expires and the window is claimable again;
- a worker whose lease expired and was taken over cannot overwrite the newer owner's work.

A failed window is released with ``lease_owner`` NULL and ``lease_expires_at`` in the future:
that is its back-off, so a poisonous window does not wedge the loop.
``updated_at`` is left alone by the worker: it is the time of the last ingest touching the window,
which the worker-lag gauge measures from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.db.repositories.base import Repository
from app.db.tables import Window


@dataclass(frozen=True)
class Claim:
    """A window this worker holds the lease of, and the version of it being computed."""

    model_id: int
    window_start: datetime
    dirty_version: int
    attempts: int


@dataclass(frozen=True)
class ModelQueue:
    """How much of one model's work waits: its windows, the dirty and failing ones, the oldest
    unprocessed change and the newest complete window (GET .../status)."""

    windows: int
    dirty_windows: int
    failing_windows: int
    oldest_dirty_update: datetime | None
    latest_complete_window: datetime | None
    parked_windows: int = 0


@dataclass(frozen=True)
class ParkedWindow:
    """A window the worker gave up on until its data or the model's settings change."""

    window_start: datetime
    attempts: int
    error: str


def _key(model_id: int, window_start: datetime) -> tuple[ColumnElement[bool], ...]:
    return (Window.model_id == model_id, Window.window_start == window_start)


def _claimable(now: datetime) -> tuple[ColumnElement[bool], ...]:
    return (
        Window.dirty_version > Window.computed_version,
        or_(Window.lease_expires_at.is_(None), Window.lease_expires_at < now),
        or_(Window.parked_version.is_(None), Window.dirty_version > Window.parked_version),
    )


_PARKED = and_(
    Window.dirty_version > Window.computed_version, Window.parked_version == Window.dirty_version
)


class WindowQueueRepository(Repository):
    """Claims, completes and releases windows inside the caller's transaction."""

    def mark_dirty(
        self,
        model_id: int,
        window_starts: list[datetime],
        now: datetime,
        newest_events: Mapping[datetime, datetime] | None = None,
    ) -> None:
        """Create or bump each window's dirty_version (what the worker claims), in key order,
        and move its newest_event up to the newest event instant this request brought into it
        (``newest_events``, by window start; a window missing there keeps its own).

        ``dirty_version = windows.dirty_version + 1`` and the greater of the two instants are
        evaluated under the row lock the upsert takes, so concurrent batches never lose a bump
        or move the clock back; taking the locks in sorted order means two batches touching
        the same windows cannot deadlock.
        """
        if not window_starts:
            return
        events = newest_events or {}
        statement = (postgresql if self.on_postgres else sqlite).insert(Window)
        stored, new = Window.newest_event, statement.excluded.newest_event
        newest = (
            func.greatest(stored, new)  # NULLs skipped
            if self.on_postgres
            # SQLite's max() of a NULL is NULL; the stored text sorts as the instants do.
            else func.coalesce(func.max(stored, new), stored, new)
        )
        statement = statement.on_conflict_do_update(
            index_elements=["model_id", "window_start"],
            set_={
                "dirty_version": Window.dirty_version + 1,
                "updated_at": statement.excluded.updated_at,
                "newest_event": newest,
            },
        )
        self.session.execute(
            statement,
            [
                {
                    "model_id": model_id,
                    "window_start": start,
                    "dirty_version": 1,
                    "computed_version": 0,
                    "attempts": 0,
                    "updated_at": now,
                    "newest_event": events.get(start),
                }
                for start in sorted(window_starts)
            ],
        )

    def model_clock(self, model_id: int) -> datetime | None:
        """The model's clock: the newest event instant ingest has brought into any of its
        windows (a prediction's timestamp, a label's time); None before any. It moves with
        the data, not with the wall clock: a feed replayed from last year is at last year."""
        newest: datetime | None = self.session.scalar(
            select(func.max(Window.newest_event)).where(Window.model_id == model_id)
        )
        return newest

    def claim_next(
        self, owner: str, lease: timedelta, now: datetime, model_id: int | None = None
    ) -> Claim | None:
        """Lease the oldest claimable window (optionally of one model), or None if none waits.

        On PostgreSQL ``FOR UPDATE SKIP LOCKED`` lets concurrent workers pass over a window
        another one is claiming; the UPDATE re-checks the claim condition, which is what keeps
        SQLite (no row locks, one writer at a time) correct too.
        """
        query = select(
            Window.model_id, Window.window_start, Window.dirty_version, Window.attempts
        ).where(*_claimable(now))
        if model_id is not None:
            query = query.where(Window.model_id == model_id)
        row = self.session.execute(
            query.order_by(Window.window_start, Window.model_id)
            .limit(1)
            .with_for_update(skip_locked=True)
        ).first()
        if row is None:
            return None
        result = self.session.execute(
            update(Window)
            .where(*_key(row.model_id, row.window_start), *_claimable(now))
            .values(
                lease_owner=owner,
                lease_expires_at=now + lease,
                attempts=Window.attempts + 1,
                updated_at=Window.updated_at,
            )
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            return None
        return Claim(row.model_id, row.window_start, row.dirty_version, row.attempts + 1)

    def hold(self, claim: Claim, owner: str) -> bool:
        """Lock the claimed window row and confirm ``owner`` still holds its lease.

        Called first in the transaction that stores results, so the check and the writes commit
        together and no other worker can complete the same window in between.
        """
        result = self.session.execute(
            update(Window)
            .where(*_key(claim.model_id, claim.window_start), Window.lease_owner == owner)
            .values(lease_owner=owner, updated_at=Window.updated_at)
        )
        return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def complete(self, claim: Claim, owner: str) -> bool:
        """Record the claimed version as computed and release the lease."""
        result = self.session.execute(
            update(Window)
            .where(*_key(claim.model_id, claim.window_start), Window.lease_owner == owner)
            .values(
                computed_version=claim.dirty_version,
                lease_owner=None,
                lease_expires_at=None,
                last_error=None,
                attempts=0,
                parked_version=None,
                updated_at=Window.updated_at,
            )
        )
        return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def park(self, claim: Claim, owner: str, error: str) -> bool:
        """Give the window back parked at the claimed version: not claimable again until its
        dirty version moves (new rows or labels, a settings change)."""
        result = self.session.execute(
            update(Window)
            .where(*_key(claim.model_id, claim.window_start), Window.lease_owner == owner)
            .values(
                lease_owner=None,
                lease_expires_at=None,
                last_error=error[:4000],
                parked_version=claim.dirty_version,
                updated_at=Window.updated_at,
            )
        )
        return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def parked(self, model_id: int, limit: int) -> list[ParkedWindow]:
        """The model's parked windows, newest first (at most ``limit``)."""
        rows = self.session.execute(
            select(Window.window_start, Window.attempts, Window.last_error)
            .where(Window.model_id == model_id, _PARKED)
            .order_by(Window.window_start.desc())
            .limit(limit)
        )
        return [ParkedWindow(start, attempts, error or "") for start, attempts, error in rows]

    def release_failed(self, claim: Claim, owner: str, error: str, retry_at: datetime) -> bool:
        """Give the window back after a failure, not claimable again before ``retry_at``."""
        result = self.session.execute(
            update(Window)
            .where(*_key(claim.model_id, claim.window_start), Window.lease_owner == owner)
            .values(
                lease_owner=None,
                lease_expires_at=retry_at,
                last_error=error[:4000],
                updated_at=Window.updated_at,
            )
        )
        return bool(result.rowcount == 1)  # type: ignore[attr-defined]

    def state(self, model_id: int) -> ModelQueue:
        """A model's queue: windows, dirty ones, failing ones, oldest change, newest done."""
        return self.totals([model_id])

    def totals(self, model_ids: Sequence[int]) -> ModelQueue:
        """The queue of several models together (one query): the sums, the oldest change, the
        newest complete window of any of them."""
        dirty = Window.dirty_version > Window.computed_version
        complete = Window.computed_version == Window.dirty_version
        row = self.session.execute(
            select(
                func.count(),
                func.count().filter(dirty),
                func.count().filter(dirty, Window.last_error.is_not(None)),
                func.min(Window.updated_at).filter(dirty),
                func.max(Window.window_start).filter(complete, Window.computed_version > 0),
                func.count().filter(_PARKED),
            ).where(Window.model_id.in_(list(model_ids)))
        ).one()
        return ModelQueue(int(row[0]), int(row[1]), int(row[2]), row[3], row[4], int(row[5]))
