"""Retention: raw predictions older than a model's ``retention_windows`` are deleted.

What is kept forever is everything computed from them: window metrics, sketches, score counts,
pi0 versions, verdicts and alert states, so the series, a pi0 recomputation (which reads
sketches, never rows) and the dashboard work as before. A window whose rows are gone is never
recomputed from rows (app/worker/compute.py keeps its stored values) and refuses new rows
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
from app.ingest.timestamps import datetime_to_micros, micros_to_datetime
from app.ingest.windows import windows_back
from app.monitoring.vocabulary import Granularity


def expire_predictions(session_factory: sessionmaker[Session], chunk_rows: int) -> int:
    """Delete one chunk of expired predictions per model with a retention, in one short
    transaction; rows deleted (0 when nothing has expired)."""
    deleted = 0
    expired_weeks: list[tuple[int, datetime]] = []
    with session_factory.begin() as session:
        repository = PurgeRepository(session)
        now = database_now(session)
        for model in repository.retained_models():
            assert model.retention_windows is not None
            cutoff = micros_to_datetime(
                windows_back(
                    datetime_to_micros(now),
                    model.retention_windows,
                    cast(Granularity, model.granularity),
                    model.timezone,
                )
            )
            # A window still to compute keeps its rows until the worker has read them.
            dirty = repository.oldest_dirty_window(model.id)
            if dirty is not None:
                cutoff = min(cutoff, dirty)
            kept_from = model.raw_kept_from
            if kept_from is None or cutoff > kept_from:
                repository.keep_raw_from(model.id, cutoff)
                kept_from = cutoff
            deleted += repository.expire_chunk(model.id, kept_from, chunk_rows)
            expired_weeks.append((model.id, kept_from))
    if deleted == 0 and session_factory.kw["bind"].dialect.name == "postgresql":
        # Whole week tables, once no key of theirs is left (each in its own transaction).
        with session_factory() as session:
            repository = PurgeRepository(session)
            for model_id, kept_from in expired_weeks:
                deleted += repository.drop_expired_weeks(model_id, kept_from)
    return deleted


def create_coming_weeks_tables(session_factory: sessionmaker[Session]) -> None:
    """PostgreSQL: this and next week's tables of every model, ahead of their first batch (a
    batch creates a missing one itself, so this only saves that batch the time)."""
    with session_factory.begin() as session:
        if session.get_bind().dialect.name == "postgresql":
            create_coming_weeks(session.connection(), database_now(session))


def rows_dropped(raw_kept_from: datetime | None, window_start: datetime) -> bool:
    """Whether retention has deleted (or is deleting) the raw rows of this window."""
    return raw_kept_from is not None and window_start < raw_kept_from
