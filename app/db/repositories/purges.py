"""SQL of deleting predictions: a deleted model's (the model and its small tables at once, its
predictions in chunks), and those older than a model's retention."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.orm import Session

from app.db.tables import ModelPurge, MonitoredModel, Prediction, Window


class PurgeRepository:
    """Reads and writes of model deletion inside the caller's transaction."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.is_postgres = session.get_bind().dialect.name == "postgresql"

    def delete_model(self, model: MonitoredModel, now: datetime) -> bool:
        """Delete the model row (the foreign keys cascade to every table but predictions) and
        record that its predictions are to be purged.

        SQLite deletes the predictions here too: it reuses the largest row id, so a model
        created next could otherwise inherit the rows left behind, and it has one writer, so
        there is no one else's ingest to keep going meanwhile. True when the predictions went
        here too.
        """
        if not self.is_postgres:
            self.session.execute(delete(Prediction).where(Prediction.model_id == model.id))
        else:
            self.session.add(ModelPurge(model_id=model.id, name=model.name, requested_at=now))
        self.session.delete(model)
        self.session.flush()
        return not self.is_postgres

    def next_purge(self) -> int | None:
        """A model id with predictions still to purge, locked so that two workers take
        different ones (SKIP LOCKED); None if there is none."""
        query = select(ModelPurge.model_id).order_by(ModelPurge.requested_at).limit(1)
        if self.is_postgres:
            query = query.with_for_update(skip_locked=True)
        return self.session.scalar(query)

    def purge_chunk(self, model_id: int, rows: int) -> int:
        """Delete up to ``rows`` predictions of ``model_id`` (one primary-key range, so the
        transaction's locks and WAL stay bounded); how many went. When none is left, the
        model's purge record goes too."""
        deleted = self.session.execute(
            text(
                "DELETE FROM predictions WHERE model_id = :model_id AND prediction_id IN "
                "(SELECT prediction_id FROM predictions WHERE model_id = :model_id LIMIT :rows)"
            ),
            {"model_id": model_id, "rows": rows},
        ).rowcount  # type: ignore[attr-defined]
        if deleted < rows:
            self.session.execute(delete(ModelPurge).where(ModelPurge.model_id == model_id))
        return int(deleted)

    def retained_models(self) -> Sequence[MonitoredModel]:
        """The models with a retention setting."""
        return self.session.scalars(
            select(MonitoredModel).where(MonitoredModel.retention_windows.is_not(None))
        ).all()

    def oldest_dirty_window(self, model_id: int) -> datetime | None:
        """Start of the model's oldest window still to compute (its rows must stay until then)."""
        return self.session.scalar(
            select(func.min(Window.window_start)).where(
                Window.model_id == model_id, Window.dirty_version > Window.computed_version
            )
        )

    def keep_raw_from(self, model_id: int, start: datetime) -> None:
        """Record that raw rows of windows before ``start`` are (being) deleted."""
        self.session.execute(
            update(MonitoredModel)
            .where(MonitoredModel.id == model_id)
            .values(raw_kept_from=start, updated_at=MonitoredModel.updated_at)
        )

    def expire_chunk(self, model_id: int, before: datetime, rows: int) -> int:
        """Delete up to ``rows`` predictions of the model's windows before ``before`` (through
        the (model_id, window_start) index); how many went."""
        stale = (
            select(Prediction.prediction_id)
            .where(Prediction.model_id == model_id, Prediction.window_start < before)
            .limit(rows)
            .scalar_subquery()
        )
        result = self.session.execute(
            delete(Prediction).where(
                Prediction.model_id == model_id, Prediction.prediction_id.in_(stale)
            )
        )
        return int(result.rowcount)  # type: ignore[attr-defined]
