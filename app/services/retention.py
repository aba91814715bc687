"""Retention: raw predictions older than a model's ``retention_windows`` are deleted.

What is kept forever is everything computed from them: window metrics, sketches, score counts,
pi0 versions, verdicts and alert states, so the series, a pi0 recomputation (which reads
sketches, never rows) and the dashboard work as before. A window whose rows are gone is never
recomputed from rows (app/windows/compute.py keeps its stored values) and refuses new rows
(app/services/ingest.py); a late label for one of its ids finds no row and is listed in
``unknown_ids``.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy.orm import Session, sessionmaker

from app.db.clock import database_now
from app.db.partitions import create_coming_weeks
from app.db.repositories.purges import PurgeRepository
from app.db.tables import MonitoredModel
from app.ingest.timestamps import datetime_to_micros, micros_to_datetime
from app.ingest.windows import windows_back
from app.monitoring.vocabulary import Granularity


def expire_predictions(session_factory: sessionmaker[Session], chunk_rows: int) -> int:
    """Delete one chunk of expired predictions per model with a retention, in one short
    transaction; rows deleted (0 when nothing has expired)."""
    for model_id in _models_whose_cutoff_moves(session_factory):
        _advance_cutoff(session_factory, model_id)
    deleted = 0
    expired_weeks: list[tuple[int, datetime]] = []
    with session_factory.begin() as session:
        repository = PurgeRepository(session)
        for model in repository.retained_models():
            if model.raw_kept_from is None:
                continue
            deleted += repository.expire_chunk(model.id, model.raw_kept_from, chunk_rows)
            expired_weeks.append((model.id, model.raw_kept_from))
    if deleted == 0 and session_factory.kw["bind"].dialect.name == "postgresql":
        # Whole week tables, once no key of theirs is left (each in its own transaction).
        with session_factory() as session:
            repository = PurgeRepository(session)
            for model_id, kept_from in expired_weeks:
                deleted += repository.drop_expired_weeks(model_id, kept_from)
    return deleted


def _models_whose_cutoff_moves(session_factory: sessionmaker[Session]) -> list[int]:
    """The models whose retention cutoff is past the one recorded (read without a lock: most
    passes move nothing and must not hold up ingest)."""
    with session_factory.begin() as session:
        repository = PurgeRepository(session)
        now = database_now(session)
        return [
            model.id
            for model in repository.retained_models()
            if model.raw_kept_from is None or _cutoff(session, model, now) > model.raw_kept_from
        ]


def _advance_cutoff(session_factory: sessionmaker[Session], model_id: int) -> None:
    """Record the model's new cutoff in a transaction of its own, under the model row's lock.

    Without the lock a batch in flight (it checked its windows against the old cutoff, its
    dirty mark not yet committed) could commit rows into a window this pass had just cut:
    acknowledged, then deleted and never counted. With it the batch either commits first (its
    window is dirty, so the cutoff stops before it) or reads the new cutoff and is refused.
    """
    with session_factory.begin() as session:
        repository = PurgeRepository(session)
        model = repository.lock_model_for_cutoff(model_id)
        if model is None or model.retention_windows is None:
            return  # deleted or changed meanwhile
        cutoff = _cutoff(session, model, database_now(session))
        if model.raw_kept_from is None or cutoff > model.raw_kept_from:
            repository.keep_raw_from(model.id, cutoff)


def _cutoff(session: Session, model: MonitoredModel, now: datetime) -> datetime:
    """Start of the oldest window whose rows the model keeps: ``retention_windows`` back from
    now, and never past a window still to compute (the worker has to read its rows first)."""
    assert model.retention_windows is not None
    cutoff = micros_to_datetime(
        windows_back(
            datetime_to_micros(now),
            model.retention_windows,
            cast(Granularity, model.granularity),
            model.timezone,
        )
    )
    dirty = PurgeRepository(session).oldest_dirty_window(model.id)
    return cutoff if dirty is None else min(cutoff, dirty)


def create_coming_weeks_tables(session_factory: sessionmaker[Session]) -> None:
    """PostgreSQL: this and next week's tables of every model, ahead of their first batch (a
    batch creates a missing one itself, so this only saves that batch the time)."""
    with session_factory.begin() as session:
        if session.get_bind().dialect.name == "postgresql":
            create_coming_weeks(session.connection(), database_now(session))


def rows_dropped(raw_kept_from: datetime | None, window_start: datetime) -> bool:
    """Whether retention has deleted (or is deleting) the raw rows of this window."""
    return raw_kept_from is not None and window_start < raw_kept_from
