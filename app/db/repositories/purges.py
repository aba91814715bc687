"""SQL of deleting predictions: a deleted model's (the model and its small tables at once, its
predictions in chunks), and those older than a model's retention."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Engine, delete, func, select, text, update

from app.db.partitions import (
    KEYS,
    PREDICTIONS,
    WEEK,
    drop_partition,
    model_table,
    week_of,
    week_table,
    weeks_of_model,
)
from app.db.repositories.base import Repository
from app.db.tables import ModelPurge, MonitoredModel, Prediction, Window


class PurgeRepository(Repository):
    """Reads and writes of model deletion inside the caller's transaction."""

    def delete_model(self, model: MonitoredModel, now: datetime) -> bool:
        """Delete the model row (the foreign keys cascade to every table but predictions) and
        record that its predictions are to be purged.

        SQLite deletes the predictions here too: it reuses the largest row id, so a model
        created next could otherwise inherit the rows left behind, and it has one writer, so
        there is no one else's ingest to keep going meanwhile. True when the predictions went
        here too.
        """
        if not self.on_postgres:
            self.session.execute(delete(Prediction).where(Prediction.model_id == model.id))
        else:
            self.session.add(ModelPurge(model_id=model.id, name=model.name, requested_at=now))
        self.session.delete(model)
        self.session.flush()
        return not self.on_postgres

    def next_purge(self) -> int | None:
        """A model id with predictions still to purge, locked so that two workers take
        different ones (SKIP LOCKED); None if there is none."""
        query = select(ModelPurge.model_id).order_by(ModelPurge.requested_at).limit(1)
        if self.on_postgres:
            query = query.with_for_update(skip_locked=True)
        return self.session.scalar(query)

    def purge_chunk(self, model_id: int, rows: int) -> int:
        """Delete up to ``rows`` predictions of ``model_id`` (one primary-key range, so the
        transaction's locks and WAL stay bounded); how many went. When none is left, the
        model's purge record goes too.

        PostgreSQL: the model's tables of predictions and keys are dropped whole instead (one
        call, whatever their size); the count is then of tables dropped. The caller's
        transaction keeps the purge record locked meanwhile, so no other worker takes it.
        """
        if self.on_postgres:
            engine = self.session.get_bind()
            assert isinstance(engine, Engine)
            dropped = sum(
                drop_partition(engine, parent, model_table(parent, model_id))
                for parent in (PREDICTIONS, KEYS)
            )
            self.session.execute(delete(ModelPurge).where(ModelPurge.model_id == model_id))
            return max(dropped, 1)  # the purge record went: work was done
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

    def lock_model_for_cutoff(self, model_id: int) -> MonitoredModel | None:
        """The model's row FOR UPDATE, which conflicts with the FOR KEY SHARE every ingest batch
        holds: it waits for the batches in flight (their dirty marks are then visible) and holds
        new ones until the cutoff is committed (they then read it and refuse expired rows)."""
        return self.session.scalar(
            select(MonitoredModel).where(MonitoredModel.id == model_id).with_for_update()
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
        the (model_id, window_start) index); how many went.

        PostgreSQL: up to ``rows`` keys of those windows go (so their ids are unknown at once),
        and up to ``rows`` rows of the week ``before`` falls in; the older weeks' tables are
        left to :meth:`drop_expired_weeks`, which drops them whole.
        """
        if self.on_postgres:
            return self._expire_keys_and_week(model_id, before, rows)
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

    def _expire_keys_and_week(self, model_id: int, before: datetime, rows: int) -> int:
        params = {"model_id": model_id, "before": before, "rows": rows}
        keys = self.session.execute(
            text(
                "DELETE FROM prediction_keys WHERE model_id = :model_id AND prediction_id IN "
                "(SELECT prediction_id FROM prediction_keys WHERE model_id = :model_id "
                "AND window_start < :before LIMIT :rows)"
            ),
            params,
        ).rowcount  # type: ignore[attr-defined]
        week = week_table(model_id, week_of(before))
        exists = self.session.execute(
            text("SELECT to_regclass(:name) IS NOT NULL"), {"name": week}
        ).scalar_one()
        predictions = 0
        if exists:  # ctid: the rows of one plain table, without a key lookup each
            predictions = self.session.execute(
                text(
                    f"DELETE FROM {week} WHERE ctid IN (SELECT ctid FROM {week} "
                    "WHERE window_start < :before LIMIT :rows)"
                ),
                params,
            ).rowcount  # type: ignore[attr-defined]
        return int(keys) + int(predictions)

    def drop_expired_weeks(self, model_id: int, before: datetime) -> int:
        """PostgreSQL: drop the model's week tables that end by ``before``, once no key of
        theirs is left (:meth:`expire_chunk` deletes those); how many went. Outside the
        caller's transaction (app.db.partitions.drop_partition)."""
        left = self.session.execute(
            text(
                "SELECT 1 FROM prediction_keys WHERE model_id = :model_id "
                "AND window_start < :before LIMIT 1"
            ),
            {"model_id": model_id, "before": week_of(before)},
        ).first()
        if left is not None:
            return 0
        engine = self.session.get_bind()
        assert isinstance(engine, Engine)
        parent = model_table(PREDICTIONS, model_id)
        weeks = weeks_of_model(self.session.connection(), model_id)
        return sum(
            drop_partition(engine, parent, week_table(model_id, start))
            for start in weeks
            if start + WEEK <= before
        )
