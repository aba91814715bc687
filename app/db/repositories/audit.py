"""SQL for the audit log."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from app.db.repositories.base import Repository
from app.db.tables import AuditEvent


class AuditRepository(Repository):
    """Appends to and reads ``audit_events`` inside the caller's transaction."""

    def add(self, event: AuditEvent) -> None:
        """Append ``event`` (flushed, so that it fails with the act, not after it)."""
        self.session.add(event)
        self.session.flush()

    def newest(self, before_id: int | None, model: str | None, limit: int) -> Sequence[AuditEvent]:
        """Up to ``limit`` events, newest first, with ids below ``before_id``, on ``model``."""
        query = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(limit)
        if before_id is not None:
            query = query.where(AuditEvent.id < before_id)
        if model is not None:
            query = query.where(AuditEvent.model == model)
        return self.session.scalars(query).all()
