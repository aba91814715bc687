"""SQL of a model's pi0 versions: the prior fraud rate every window is evaluated at."""

from __future__ import annotations

from sqlalchemy import select

from app.db.metrics_tables import Pi0Version
from app.db.repositories.base import Repository


class Pi0Repository(Repository):
    """Reads and appends a model's pi0 versions inside the caller's transaction."""

    def current(self, model_id: int) -> Pi0Version | None:
        """The model's newest pi0 version."""
        return self.session.scalar(
            select(Pi0Version)
            .where(Pi0Version.model_id == model_id)
            .order_by(Pi0Version.version.desc())
            .limit(1)
        )

    def versions(self, model_id: int) -> list[Pi0Version]:
        """Every pi0 version of the model, oldest first."""
        return list(
            self.session.scalars(
                select(Pi0Version)
                .where(Pi0Version.model_id == model_id)
                .order_by(Pi0Version.version)
            )
        )

    def add(self, version: Pi0Version) -> Pi0Version:
        """Insert a pi0 version and flush (a concurrent duplicate version raises here)."""
        self.session.add(version)
        self.session.flush()
        return version
