"""SQL for monitored models."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, update

from app.db.repositories.base import Repository
from app.db.tables import MonitoredModel, Window
from app.db.types import utcnow


class ModelRepository(Repository):
    """Reads and writes rows of ``models`` inside the caller's transaction."""

    def get_by_name(
        self, name: str, *, lock: bool = False, share: bool = False, delete: bool = False
    ) -> MonitoredModel | None:
        """The model called ``name``, or None.

        ``lock`` takes the row FOR NO KEY UPDATE, as the worker does while it stores a window:
        changes to a model's monitoring state (a new reference version) and the worker's passes
        over it then happen one at a time, while ingest is not blocked. ``share`` takes it FOR
        KEY SHARE, as an ingest batch does: the model cannot be deleted until the batch ends,
        and a batch that waited for a deletion finds no model. ``delete`` takes it FOR UPDATE,
        which waits for the batches in progress.
        """
        query = select(MonitoredModel).where(MonitoredModel.name == name)
        if lock:
            query = query.with_for_update(key_share=True)
        elif share:
            query = query.with_for_update(read=True, key_share=True)
        elif delete:
            query = query.with_for_update()
        return self.session.scalar(query)

    def get(self, model_id: int) -> MonitoredModel | None:
        """The model with id ``model_id``, or None (no lock)."""
        return self.session.get(MonitoredModel, model_id)

    def lock(self, model_id: int) -> MonitoredModel | None:
        """The model with id ``model_id``, its row locked FOR NO KEY UPDATE (see get_by_name)."""
        return self.session.scalar(
            select(MonitoredModel)
            .where(MonitoredModel.id == model_id)
            .with_for_update(key_share=True)
        )

    def list_all(self) -> Sequence[MonitoredModel]:
        """Every model, by name."""
        return self.session.scalars(select(MonitoredModel).order_by(MonitoredModel.name)).all()

    def add(self, model: MonitoredModel) -> MonitoredModel:
        """Insert ``model`` and flush (a duplicate name raises IntegrityError here)."""
        self.session.add(model)
        self.session.flush()
        return model

    def mark_all_windows_dirty(self, model_id: int) -> int:
        """Bump every window of the model so the worker recomputes it; returns windows touched."""
        result = self.session.execute(
            update(Window)
            .where(Window.model_id == model_id)
            .values(dirty_version=Window.dirty_version + 1, updated_at=utcnow())
        )
        return int(result.rowcount)  # type: ignore[attr-defined]
