"""SQL for the worker's results: a window's metrics per segment and their metric values (pi0
versions are in pi0.py, heartbeats in heartbeats.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

from sqlalchemy import delete, func, select
from sqlalchemy.orm import load_only

from app.db.bulk import insert_many, update_each
from app.db.metrics_tables import WindowMetrics, WindowMetricValue
from app.db.repositories.base import Repository
from app.db.repositories.window_labels import LABEL_COLUMNS, of_segment, window_labels
from app.monitoring.pi0 import WindowLabels
from app.monitoring.verdicts import StoredVerdict
from app.monitoring.vocabulary import Verdict

_WINDOW_KEY = ("model_id", "window_start", "segment")


# The columns of a series point (app.services.metrics._point), besides the primary key.
SERIES_COLUMNS = (
    "rows_total",
    "labelled",
    "positives",
    "label_coverage",
    "pi",
    "pi0",
    "verdict",
    "verdict_reason",
    "judged_at",
    "mature",
    "nowcast",
    "early",
)


class StoredSegment(NamedTuple):
    """What a series recomputation reads of a stored window segment."""

    window_start: datetime
    segment: str
    rows_total: int
    labelled: int
    positives: int
    sketch: bytes | None
    intervals: dict[str, Any] | None
    interval_grid: bytes | None
    source_version: int
    duration_seconds: float
    verdict: str
    verdict_reason: str | None
    judged_at: datetime | None
    reference_version: int | None
    evidence: dict[str, Any] | None
    label_coverage: float | None

    @property
    def stored_verdict(self) -> StoredVerdict:
        """The row's judgement columns."""
        return StoredVerdict(
            cast(Verdict, self.verdict),
            self.verdict_reason,
            self.judged_at,
            self.reference_version,
            self.evidence,
        )


class PeriodWindow(NamedTuple):
    """A stored window segment as the analyses read it (its sketch is read apart, when needed)."""

    window_start: datetime
    rows_total: int
    labelled: int
    positives: int
    label_coverage: float | None
    pi: float | None
    pi0: float | None
    computed_at: datetime
    has_sketch: bool


class CalibratedValue(NamedTuple):
    """One window's stored calibrated value of one metric, as a side-by-side series shows it."""

    window_start: datetime
    calibrated: float | None
    calibrated_ci_low: float | None
    calibrated_ci_high: float | None
    undefined_reason: str | None


class SeriesValue(NamedTuple):
    """One window's stored values of one metric, as a series point shows them."""

    metric: str
    window_start: datetime
    regular: float | None
    regular_ci_low: float | None
    regular_ci_high: float | None
    calibrated: float | None
    calibrated_ci_low: float | None
    calibrated_ci_high: float | None
    prior_effect: float | None
    performance_effect: float | None
    undefined_reason: str | None


class SegmentSummary(NamedTuple):
    """What the computed windows of one segment add up to."""

    segment: str
    windows: int
    rows: int
    newest_window: datetime


class WindowMetricsRepository(Repository):
    """Reads and writes the worker's tables inside the caller's transaction."""

    def history(self, model_id: int, segment: str) -> list[WindowLabels]:
        """Label counts of every stored window of one segment, oldest first."""
        rows = self.session.execute(
            select(
                *LABEL_COLUMNS,
            )
            .where(*of_segment(model_id, segment))
            .order_by(WindowMetrics.window_start)
        ).all()
        return [window_labels(row) for row in rows]

    def verdicts(self, model_id: int, window_start: datetime) -> dict[str, StoredVerdict]:
        """The verdicts already issued for a window, by segment (provisional ones left out)."""
        rows = self.session.execute(
            select(
                WindowMetrics.segment,
                WindowMetrics.verdict,
                WindowMetrics.verdict_reason,
                WindowMetrics.judged_at,
                WindowMetrics.reference_version,
                WindowMetrics.evidence,
            ).where(
                WindowMetrics.model_id == model_id,
                WindowMetrics.window_start == window_start,
                WindowMetrics.judged_at.is_not(None),
            )
        )
        return {
            segment: StoredVerdict(cast(Verdict, verdict), reason, judged, version, evidence)
            for segment, verdict, reason, judged, version, evidence in rows
        }

    def windows(
        self,
        model_id: int,
        segment: str,
        starts: Sequence[datetime],
    ) -> list[WindowMetrics]:
        """Stored rows (sketches included) of one segment at the given window starts."""
        if not starts:
            return []
        return list(
            self.session.scalars(
                select(WindowMetrics)
                .where(
                    *of_segment(model_id, segment),
                    WindowMetrics.window_start.in_(list(starts)),
                )
                .order_by(WindowMetrics.window_start)
            )
        )

    def series(self, model_id: int) -> list[StoredSegment]:
        """Every stored window segment of the model, oldest first, with what a recomputation at
        a new pi0 reads (plain rows: no ORM objects to track, no old results decoded)."""
        rows = self.session.execute(
            select(*(getattr(WindowMetrics, name) for name in StoredSegment._fields))
            .where(WindowMetrics.model_id == model_id)
            .order_by(WindowMetrics.window_start, WindowMetrics.segment)
        )
        return [StoredSegment(*row) for row in rows]

    def replace_window(
        self,
        model_id: int,
        window_start: datetime,
        rows: Sequence[dict[str, Any]],
        values: Sequence[dict[str, Any]],
    ) -> None:
        """Replace everything stored for one window (a segment that vanished goes too)."""
        key = (
            WindowMetricValue.model_id == model_id,
            WindowMetricValue.window_start == window_start,
        )
        self.session.execute(delete(WindowMetricValue).where(*key))
        self.session.execute(
            delete(WindowMetrics).where(
                WindowMetrics.model_id == model_id, WindowMetrics.window_start == window_start
            )
        )
        insert_many(self.session, WindowMetrics, rows)
        insert_many(self.session, WindowMetricValue, values)

    def rewrite_series(
        self, model_id: int, rows: Sequence[dict[str, Any]], values: Sequence[dict[str, Any]]
    ) -> None:
        """Update re-evaluated rows by primary key and replace all of the model's values.

        A row updates only the columns it names (rows naming the same columns go together).

        Used after a pi0 move: the sketch and counts of each row stay as stored.
        """
        # Rows may leave out columns that did not change.
        update_each(self.session, WindowMetrics, rows, key=_WINDOW_KEY)
        self.session.execute(
            delete(WindowMetricValue).where(WindowMetricValue.model_id == model_id)
        )
        insert_many(self.session, WindowMetricValue, values)

    def segment_rows(
        self,
        model_id: int,
        segment: str,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> list[WindowMetrics]:
        """Rows of one segment in [start, end), oldest first, with only what a series point
        shows: counts, priors, verdict, judged_at and the nowcast.

        The evaluation's JSON (result, intervals, decomposition, evidence) and the binary
        columns are not loaded: decoding them was most of a year-long series' time (measured:
        ~60% of ``GET .../metrics`` on 365 windows), and a series reads its values from
        ``window_metric_values``. Touching any other column raises instead of lazy-loading
        row by row.
        """
        query = (
            select(WindowMetrics)
            .options(
                load_only(*(getattr(WindowMetrics, c) for c in SERIES_COLUMNS), raiseload=True)
            )
            .where(*of_segment(model_id, segment))
        )
        if start is not None:
            query = query.where(WindowMetrics.window_start >= start)
        if end is not None:
            query = query.where(WindowMetrics.window_start < end)
        return list(self.session.scalars(query.order_by(WindowMetrics.window_start)))

    def period_windows(
        self,
        model_id: int,
        segment: str,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> list[PeriodWindow]:
        """Counts of one segment's windows in [start, end), oldest first (no sketch bytes)."""
        query = select(
            *(getattr(WindowMetrics, name) for name in PeriodWindow._fields[:-1]),
            WindowMetrics.sketch.is_not(None),
        ).where(*of_segment(model_id, segment))
        if start is not None:
            query = query.where(WindowMetrics.window_start >= start)
        if end is not None:
            query = query.where(WindowMetrics.window_start < end)
        rows = self.session.execute(query.order_by(WindowMetrics.window_start))
        return [PeriodWindow._make(row) for row in rows]

    def sketches(self, model_id: int, segment: str, starts: Sequence[datetime]) -> list[bytes]:
        """The stored sketches of one segment's windows at ``starts``, oldest first."""
        return list(self.sketches_at(model_id, segment, starts).values())

    def sketches_at(
        self, model_id: int, segment: str, starts: Sequence[datetime]
    ) -> dict[datetime, bytes]:
        """The stored sketches of one segment's windows at ``starts`` by window start, oldest
        first (a window without a sketch is absent)."""
        if not starts:
            return {}
        rows = self.session.execute(
            select(WindowMetrics.window_start, WindowMetrics.sketch)
            .where(
                *of_segment(model_id, segment),
                WindowMetrics.window_start.in_(list(starts)),
                WindowMetrics.sketch.is_not(None),
            )
            .order_by(WindowMetrics.window_start)
        )
        return {start: sketch for start, sketch in rows if sketch is not None}

    def metric_values(
        self,
        model_id: int,
        segment: str,
        metric: str | None,
        starts: Sequence[datetime] | None = None,
    ) -> list[WindowMetricValue]:
        """Per-metric rows of one segment (one metric or all), oldest window first."""
        query = select(WindowMetricValue).where(
            WindowMetricValue.model_id == model_id, WindowMetricValue.segment == segment
        )
        if metric is not None:
            query = query.where(WindowMetricValue.metric == metric)
        if starts is not None:
            query = query.where(WindowMetricValue.window_start.in_(list(starts)))
        return list(self.session.scalars(query.order_by(WindowMetricValue.window_start)))

    def metrics_of(
        self, model_id: int, segment: str, metrics: Sequence[str], starts: Sequence[datetime]
    ) -> list[SeriesValue]:
        """Several metrics' values of one segment's windows at ``starts``: one query for a
        page's series, as plain rows (ORM objects were the largest part of a five-metric series'
        time: 136 of 373 ms profiled on 301 windows). The two lists let the primary key be probed
        for each (window, metric); a range of window starts instead scanned every segment's and
        metric's rows in it (38 ms against 13 ms for 5 metrics of 295 windows of 11 segments on
        SQLite, EXPLAIN QUERY PLAN)."""
        if not starts:
            return []
        rows = self.session.execute(
            select(*(getattr(WindowMetricValue, name) for name in SeriesValue._fields)).where(
                WindowMetricValue.model_id == model_id,
                WindowMetricValue.segment == segment,
                WindowMetricValue.metric.in_(list(metrics)),
                WindowMetricValue.window_start.in_(list(starts)),
            )
        )
        return [SeriesValue._make(row) for row in rows]

    def calibrated_values(
        self, model_id: int, segment: str, metric: str, first: datetime, last: datetime
    ) -> list[CalibratedValue]:
        """One metric's calibrated values of one segment's windows in [first, last], oldest
        first: plain rows of five columns (ORM objects of every column were a tenth of a
        compare on a year of windows), bounded by a range rather than a list of 365 starts."""
        rows = self.session.execute(
            select(*(getattr(WindowMetricValue, name) for name in CalibratedValue._fields))
            .where(
                WindowMetricValue.model_id == model_id,
                WindowMetricValue.segment == segment,
                WindowMetricValue.metric == metric,
                WindowMetricValue.window_start >= first,
                WindowMetricValue.window_start <= last,
            )
            .order_by(WindowMetricValue.window_start)
        )
        return [CalibratedValue._make(row) for row in rows]

    def window(self, model_id: int, window_start: datetime, segment: str) -> WindowMetrics | None:
        """One stored window segment, sketch included."""
        return self.session.get(WindowMetrics, (model_id, window_start, segment))

    def segments(self, model_id: int, window_start: datetime) -> list[str]:
        """The segments stored for one window, by name."""
        return list(
            self.session.scalars(
                select(WindowMetrics.segment)
                .where(
                    WindowMetrics.model_id == model_id, WindowMetrics.window_start == window_start
                )
                .order_by(WindowMetrics.segment)
            )
        )

    def has_segment(self, model_id: int, segment: str) -> bool:
        """Whether any window of ``segment`` is stored (one index probe)."""
        found = self.session.scalar(
            select(WindowMetrics.window_start).where(*of_segment(model_id, segment)).limit(1)
        )
        return found is not None

    def segment_names(self, model_id: int) -> set[str]:
        """The segments with a stored window."""
        return set(
            self.session.scalars(
                select(WindowMetrics.segment).where(WindowMetrics.model_id == model_id).distinct()
            )
        )

    def segment_summaries(self, model_id: int) -> dict[str, SegmentSummary]:
        """Per segment: computed windows, their rows, the newest one (one pass over the
        model's window_metrics rows, served by its (model_id, segment, window_start) index)."""
        rows = self.session.execute(
            select(
                WindowMetrics.segment,
                func.count(),
                func.sum(WindowMetrics.rows_total),
                func.max(WindowMetrics.window_start),
            )
            .where(WindowMetrics.model_id == model_id)
            .group_by(WindowMetrics.segment)
        )
        return {
            segment: SegmentSummary(segment, int(windows), int(total or 0), newest)
            for segment, windows, total, newest in rows
        }
