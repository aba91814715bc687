"""SQL of the early estimates: a segment's recent windows with their label arrivals, the
complete windows the dispersion is read off, and the estimates' writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from app.db.bulk import update_each
from app.db.metrics_tables import WindowMetrics
from app.db.repositories.base import Repository
from app.db.repositories.window_labels import LABEL_COLUMNS, of_segment, window_labels
from app.monitoring.pi0 import WindowLabels
from app.monitoring.vocabulary import DROP_VERDICTS


@dataclass(frozen=True, slots=True)
class RecentWindow:
    """A stored window segment as the early estimates read it."""

    window_start: datetime
    labels: WindowLabels
    arrivals: bytes | None
    score_counts: bytes | None
    flagged: int | None
    judged: bool
    early: dict[str, Any] | None
    nowcast: dict[str, Any] | None


class EarlyRepository(Repository):
    """Reads and writes of the early estimates inside the caller's transaction."""

    def windows_since(self, model_id: int, segment: str, since: datetime) -> list[RecentWindow]:
        """The segment's windows starting at or after ``since``, oldest first."""
        rows = self.session.execute(
            select(
                *LABEL_COLUMNS,
                WindowMetrics.arrivals,
                WindowMetrics.score_counts,
                WindowMetrics.flagged,
                WindowMetrics.judged_at,
                WindowMetrics.early,
                WindowMetrics.nowcast,
            )
            .where(
                *of_segment(model_id, segment),
                WindowMetrics.window_start >= since,
            )
            .order_by(WindowMetrics.window_start)
        )
        return [
            RecentWindow(
                row[0],
                window_labels(row),
                arrivals=row[4],
                score_counts=row[5],
                flagged=row[6],
                judged=row[7] is not None,
                early=row[8],
                nowcast=row[9],
            )
            for row in rows
        ]

    def calm_counts(
        self, model_id: int, segment: str, *, after: datetime, limit: int
    ) -> list[bytes]:
        """The score counts of the segment's newest judged windows after ``after`` whose verdict
        is not a drop: complete windows the model was not paging on; oldest first."""
        rows = self.session.scalars(
            select(WindowMetrics.score_counts)
            .where(
                *of_segment(model_id, segment),
                WindowMetrics.window_start > after,
                WindowMetrics.judged_at.is_not(None),
                WindowMetrics.verdict.not_in(sorted(DROP_VERDICTS)),
                WindowMetrics.score_counts.is_not(None),
            )
            .order_by(WindowMetrics.window_start.desc())
            .limit(limit)
        )
        return [counts for counts in reversed(list(rows)) if counts is not None]

    def sketch(self, model_id: int, segment: str, window_start: datetime) -> bytes | None:
        """A window segment's stored curve sketch."""
        return self.session.scalar(
            select(WindowMetrics.sketch).where(
                *of_segment(model_id, segment),
                WindowMetrics.window_start == window_start,
            )
        )

    def store(self, model_id: int, rows: Sequence[dict[str, Any]]) -> None:
        """Write windows' early estimates: each dict holds ``window_start``, ``segment`` and
        ``early``."""
        update_each(
            self.session,
            WindowMetrics,
            [{"model_id": model_id, **row} for row in rows],
            key=("model_id", "window_start", "segment"),
        )
