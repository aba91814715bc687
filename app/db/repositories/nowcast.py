"""SQL of the nowcast: a model's score bins, the windows still to estimate, and the reference
windows' score counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, func, or_, select, update

from app.db.metrics_tables import ScoreBins, SegmentReference, WindowMetrics
from app.db.repositories.base import Repository
from app.db.repositories.window_labels import LABEL_COLUMNS, of_segment, window_labels
from app.db.tables import Window
from app.db.types import utcnow
from app.monitoring.pi0 import WindowLabels


@dataclass(frozen=True, slots=True)
class WindowToNowcast:
    """A stored window segment whose nowcast is missing or against an older reference."""

    labels: WindowLabels
    score_counts: bytes
    flagged: int
    judged: bool


@dataclass(frozen=True, slots=True)
class PendingNowcast:
    """A window of a segment's backlog, before its score counts are read."""

    labels: WindowLabels
    flagged: int
    judged: bool

    def with_counts(self, score_counts: bytes) -> WindowToNowcast:
        """The window with its score counts."""
        return WindowToNowcast(self.labels, score_counts, self.flagged, self.judged)


@dataclass(frozen=True, slots=True)
class SegmentSpan:
    """A segment's windows after ``after`` (its reference's last window), optionally within
    [``since``, ``until``], and not nowcast against reference ``version``."""

    segment: str
    after: datetime
    version: int = 0
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class ReferenceWindowCounts:
    """The score counts of every segment's reference windows under one reference version,
    read in one query (:meth:`NowcastRepository.reference_window_counts_by_segment`)."""

    version: int
    by_segment: dict[str, list[bytes | None]]


class NowcastRepository(Repository):
    """Reads and writes the nowcast's state inside the caller's transaction."""

    def score_bins(self, model_id: int) -> ScoreBins | None:
        """The model's score bins, if cut."""
        return self.session.get(ScoreBins, model_id)

    def add_score_bins(self, row: ScoreBins) -> None:
        """Store a model's newly cut score bins."""
        self.session.add(row)
        self.session.flush()

    def mark_uncounted_dirty(self, model_id: int, except_start: datetime) -> int:
        """Re-dirty the model's stored windows that have no score counts (computed before its
        bins were cut), so the worker counts their scores; returns windows touched."""
        uncounted = select(WindowMetrics.window_start).where(
            WindowMetrics.model_id == model_id,
            WindowMetrics.score_counts.is_(None),
            WindowMetrics.window_start != except_start,
        )
        result = self.session.execute(
            update(Window)
            .where(Window.model_id == model_id, Window.window_start.in_(uncounted))
            .values(dirty_version=Window.dirty_version + 1, updated_at=utcnow())
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    def backlogs(
        self, model_id: int, spans: Sequence[SegmentSpan], *, limit: int
    ) -> dict[str, list[PendingNowcast]]:
        """Each span's windows with score counts and no nowcast against the span's reference
        version, newest first (the ones without labels matter most), at most ``limit`` a
        segment, all in one query; without the counts (:meth:`counts_of_spans` reads those for
        the windows a pass takes)."""
        if not spans:
            return {}
        version = WindowMetrics.nowcast_reference_version
        ranked = (
            select(
                *LABEL_COLUMNS,
                WindowMetrics.segment,
                WindowMetrics.flagged,
                WindowMetrics.judged_at,
                func.row_number()
                .over(
                    partition_by=WindowMetrics.segment, order_by=WindowMetrics.window_start.desc()
                )
                .label("rank"),
            )
            .where(
                WindowMetrics.model_id == model_id,
                WindowMetrics.score_counts.is_not(None),
                WindowMetrics.flagged.is_not(None),
                or_(
                    *(
                        and_(
                            WindowMetrics.segment == span.segment,
                            WindowMetrics.window_start > span.after,
                            or_(version.is_(None), version != span.version),
                        )
                        for span in spans
                    )
                ),
            )
            .subquery()
        )
        c = ranked.c
        rows = self.session.execute(
            select(c.window_start, c.labelled, c.positives, c.label_coverage)
            .add_columns(c.segment, c.flagged, c.judged_at)
            .where(c.rank <= limit)
            .order_by(c.segment, c.window_start.desc())
        )
        out: dict[str, list[PendingNowcast]] = {}
        for row in rows:
            pending = PendingNowcast(window_labels(row), int(row[5]), row[6] is not None)
            out.setdefault(row[4], []).append(pending)
        return out

    def counts_of_spans(
        self, model_id: int, spans: Sequence[SegmentSpan]
    ) -> dict[str, list[tuple[datetime, bytes]]]:
        """The score counts of each span's windows within [``since``, ``until``], in one
        query, by segment, oldest first."""
        if not spans:
            return {}
        start = WindowMetrics.window_start
        rows = self.session.execute(
            select(WindowMetrics.segment, start, WindowMetrics.score_counts)
            .where(
                WindowMetrics.model_id == model_id,
                WindowMetrics.score_counts.is_not(None),
                or_(
                    *(
                        and_(
                            WindowMetrics.segment == span.segment,
                            start > span.after,
                            *([start >= span.since] if span.since is not None else []),
                            *([start <= span.until] if span.until is not None else []),
                        )
                        for span in spans
                    )
                ),
            )
            .order_by(WindowMetrics.segment, start)
        )
        out: dict[str, list[tuple[datetime, bytes]]] = {}
        for segment, window_start, counts in rows:
            if counts is not None:
                out.setdefault(segment, []).append((window_start, counts))
        return out

    def reference_window_counts(
        self,
        model_id: int,
        segment: str,
        version: int,
        *,
        read: ReferenceWindowCounts | None = None,
    ) -> list[bytes | None]:
        """The score counts of the windows that make up a segment's reference ``version``, in
        time order (the dispersion reads successive windows); taken from ``read`` (the pass's
        one read of every segment's) when it holds that version."""
        if read is not None and read.version == version:
            return list(read.by_segment.get(segment, []))
        return list(
            self.session.scalars(
                select(WindowMetrics.score_counts)
                .where(
                    *of_segment(model_id, segment),
                    WindowMetrics.verdict == "reference",
                    WindowMetrics.reference_version == version,
                )
                .order_by(WindowMetrics.window_start)
            )
        )

    def reference_window_counts_by_segment(
        self, model_id: int, version: int
    ) -> ReferenceWindowCounts:
        """:meth:`reference_window_counts` of every segment's reference ``version`` in one
        query (a model of 100 segments made 100 round trips of it per pass, twice)."""
        rows = self.session.execute(
            select(WindowMetrics.segment, WindowMetrics.score_counts)
            .where(
                WindowMetrics.model_id == model_id,
                WindowMetrics.verdict == "reference",
                WindowMetrics.reference_version == version,
            )
            .order_by(WindowMetrics.segment, WindowMetrics.window_start)
        )
        out: dict[str, list[bytes | None]] = {}
        for segment, counts in rows:
            out.setdefault(segment, []).append(counts)
        return ReferenceWindowCounts(version, out)

    def set_reference_counts(
        self, model_id: int, segment: str, version: int, score_counts: bytes
    ) -> None:
        """Store a frozen reference's pooled score counts."""
        self.session.execute(
            update(SegmentReference)
            .where(
                SegmentReference.model_id == model_id,
                SegmentReference.segment == segment,
                SegmentReference.version == version,
            )
            .values(score_counts=score_counts)
        )

    def reference_counts(self, model_id: int, segment: str, version: int) -> bytes | None:
        """A frozen reference's pooled score counts, if stored."""
        return self.session.scalar(
            select(SegmentReference.score_counts).where(
                SegmentReference.model_id == model_id,
                SegmentReference.segment == segment,
                SegmentReference.version == version,
            )
        )
