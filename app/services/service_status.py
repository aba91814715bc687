"""The service's work at a glance: what waits for the worker, over the models a token reads,
and how many workers are alive (the web UI shows it on every page)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.db.clock import database_now
from app.db.repositories.models import ModelRepository
from app.db.repositories.window_queue import WindowQueueRepository
from app.observability.snapshot import worker_totals
from app.schemas.service_status import ServiceStatusOut
from app.services.model_access import ModelSet
from app.settings import Settings


def service_status(session: Session, models: ModelSet, settings: Settings) -> ServiceStatusOut:
    """Queue totals over the models in ``models``; workers alive by the database's clock."""
    ids = [m.id for m in ModelRepository(session).list_all() if models.sees(m.name)]
    queue = WindowQueueRepository(session).totals(ids)
    now = database_now(session)
    workers = worker_totals(session, now=now, lease_seconds=settings.worker_lease_seconds)
    lag = queue.oldest_dirty_update
    return ServiceStatusOut(
        models=len(ids),
        dirty_windows=queue.dirty_windows,
        failing_windows=queue.failing_windows,
        parked_windows=queue.parked_windows,
        oldest_dirty_update=lag,
        worker_lag_seconds=max((now - lag).total_seconds(), 0.0) if lag is not None else 0.0,
        workers_alive=workers.alive,
    )
