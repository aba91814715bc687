"""SQL of the drop detector's state: reference versions, frozen references, alert states, and
the judgement columns of ``window_metrics``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import delete, func, select, tuple_, update

from app.db.bulk import insert_many, update_each, update_many
from app.db.metrics_tables import (
    AlertStateRow,
    ReferenceSpec,
    SegmentReference,
    WindowMetrics,
    WindowMetricValue,
)
from app.db.repositories.base import Repository
from app.db.repositories.window_labels import LABEL_COLUMNS, window_labels
from app.db.tables import Window
from app.db.types import utcnow
from app.monitoring.pi0 import WindowLabels


@dataclass(frozen=True, slots=True)
class UnjudgedWindow:
    """A stored window segment without a verdict yet."""

    segment: str
    labels: WindowLabels
    rows_total: int
    mature: bool


@dataclass(frozen=True, slots=True)
class WindowForJudging:
    """What judging a window segment reads back from storage."""

    window_start: datetime
    segment: str
    result: dict[str, Any] | None
    intervals: dict[str, Any] | None


class MonitoringRepository(Repository):
    """Reads and writes the detector's tables inside the caller's transaction."""

    # --- reference versions ----------------------------------------------------------------
    def current_spec(self, model_id: int) -> ReferenceSpec | None:
        """The model's newest reference version."""
        return self.session.scalar(
            select(ReferenceSpec)
            .where(ReferenceSpec.model_id == model_id)
            .order_by(ReferenceSpec.version.desc())
            .limit(1)
        )

    def specs(self, model_id: int) -> list[ReferenceSpec]:
        """Every reference version of the model, oldest first."""
        return list(
            self.session.scalars(
                select(ReferenceSpec)
                .where(ReferenceSpec.model_id == model_id)
                .order_by(ReferenceSpec.version)
            )
        )

    def add_spec(
        self,
        model_id: int,
        kind: str,
        *,
        start_date: date | None = None,
        end_date: date | None = None,
        as_of: datetime | None = None,
    ) -> ReferenceSpec:
        """Cut the model's next reference version and flush."""
        current = self.current_spec(model_id)
        spec = ReferenceSpec(
            model_id=model_id,
            version=(current.version + 1) if current is not None else 1,
            kind=kind,
            start_date=start_date,
            end_date=end_date,
            as_of=as_of,
            created_at=utcnow(),
        )
        self.session.add(spec)
        self.session.flush()
        return spec

    def touch_newest_window(self, model_id: int) -> None:
        """Re-dirty the model's newest window, so a worker runs the detector soon."""
        newest = (
            select(func.max(Window.window_start)).where(Window.model_id == model_id)
        ).scalar_subquery()
        self.session.execute(
            update(Window)
            .where(Window.model_id == model_id, Window.window_start == newest)
            .values(dirty_version=Window.dirty_version + 1, updated_at=utcnow())
        )

    # --- frozen references -----------------------------------------------------------------
    def segment_references(self, model_id: int, version: int) -> dict[str, SegmentReference]:
        """The segments' frozen references under ``version``, by segment."""
        rows = self.session.scalars(
            select(SegmentReference).where(
                SegmentReference.model_id == model_id, SegmentReference.version == version
            )
        )
        return {row.segment: row for row in rows}

    def add_segment_reference(self, row: SegmentReference) -> None:
        """Store a segment's newly frozen reference."""
        self.session.add(row)
        self.session.flush()

    # --- alert states ----------------------------------------------------------------------
    def alert_states(self, model_id: int) -> dict[str, AlertStateRow]:
        """The model's alert state per segment."""
        rows = self.session.scalars(select(AlertStateRow).where(AlertStateRow.model_id == model_id))
        return {row.segment: row for row in rows}

    def replace_alert_states(self, model_id: int, rows: Sequence[dict[str, Any]]) -> None:
        """Replace the alert states of the segments in ``rows`` (dicts of column values)."""
        segments = [row["segment"] for row in rows]
        if not segments:
            return
        self.session.execute(
            delete(AlertStateRow).where(
                AlertStateRow.model_id == model_id, AlertStateRow.segment.in_(segments)
            )
        )
        insert_many(self.session, AlertStateRow, rows)

    # --- windows to judge ------------------------------------------------------------------
    def unjudged(self, model_id: int) -> list[UnjudgedWindow]:
        """Every stored window segment of the model that has no verdict yet, oldest first."""
        rows = self.session.execute(
            select(
                *LABEL_COLUMNS,
                WindowMetrics.segment,
                WindowMetrics.rows_total,
                WindowMetrics.mature,
            )
            .where(WindowMetrics.model_id == model_id, WindowMetrics.judged_at.is_(None))
            .order_by(WindowMetrics.window_start, WindowMetrics.segment)
        )
        return [
            UnjudgedWindow(row[4], window_labels(row), int(row[5]), bool(row[6])) for row in rows
        ]

    def mark_mature(self, model_id: int, keys: Sequence[tuple[datetime, str]]) -> None:
        """Record that the given (window start, segment) pairs' labels are now complete."""
        update_each(
            self.session,
            WindowMetrics,
            [
                {"model_id": model_id, "window_start": start, "segment": segment, "mature": True}
                for start, segment in keys
            ],
            key=("model_id", "window_start", "segment"),
        )

    def for_judging(
        self, model_id: int, keys: Sequence[tuple[datetime, str]]
    ) -> dict[tuple[datetime, str], WindowForJudging]:
        """The stored values of the given (window start, segment) pairs."""
        if not keys:
            return {}
        rows = self.session.execute(
            select(
                WindowMetrics.window_start,
                WindowMetrics.segment,
                WindowMetrics.result,
                WindowMetrics.intervals,
            ).where(
                WindowMetrics.model_id == model_id,
                tuple_(WindowMetrics.window_start, WindowMetrics.segment).in_(list(keys)),
            )
        )
        return {(row[0], row[1]): WindowForJudging(*row) for row in rows}

    def record_judgements(self, model_id: int, judged: Sequence[dict[str, Any]]) -> None:
        """Write verdicts (or nowcasts): each dict holds the window key (``window_start``,
        ``segment``) and the columns it sets."""
        update_each(
            self.session,
            WindowMetrics,
            [{"model_id": model_id, **row} for row in judged],
            key=("model_id", "window_start", "segment"),
        )

    def record_effects(self, model_id: int, effects: Sequence[dict[str, Any]]) -> None:
        """Write prior and performance effects of metric rows (window, segment, metric)."""
        update_many(
            self.session,
            WindowMetricValue,
            [{"model_id": model_id, **row} for row in effects],
            key=("model_id", "window_start", "segment", "metric"),
        )
