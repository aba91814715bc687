"""SQL of the segment names each model has (the segment cap's bookkeeping)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite

from app.db.repositories.base import Repository
from app.db.tables import ModelSegment


class SegmentRepository(Repository):
    """Reads and writes ``model_segments`` inside the caller's transaction."""

    def known(self, model_id: int, segments: Collection[str]) -> set[str]:
        """Which of ``segments`` (a bounded set: the caller checks its size) the model has."""
        rows = self.session.scalars(
            select(ModelSegment.segment).where(
                ModelSegment.model_id == model_id, ModelSegment.segment.in_(list(segments))
            )
        )
        return set(rows)

    def names(self, model_id: int) -> list[str]:
        """Every segment name the model has received rows for, sorted."""
        rows = self.session.scalars(
            select(ModelSegment.segment)
            .where(ModelSegment.model_id == model_id)
            .order_by(ModelSegment.segment)
        )
        return list(rows)

    def count(self, model_id: int) -> int:
        """How many segments the model has."""
        total = self.session.scalar(
            select(func.count()).select_from(ModelSegment).where(ModelSegment.model_id == model_id)
        )
        return int(total or 0)

    def add(self, model_id: int, segments: Collection[str]) -> None:
        """Record new segment names (a name another batch just recorded is kept once)."""
        if not segments:
            return
        dialect = postgresql if self.on_postgres else sqlite
        statement = dialect.insert(ModelSegment).on_conflict_do_nothing()
        self.session.execute(
            statement, [{"model_id": model_id, "segment": name} for name in sorted(segments)]
        )
