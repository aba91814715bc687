"""Read-only queries behind the Prometheus collector (app/observability/collector.py).

Every API replica answers a scrape from the same rows, so the exported values do not depend on
which process computed a window. Each method is one or two queries over all models at once:
a scrape costs a constant number of round trips, not one per model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, case, func, or_, select, true
from sqlalchemy.orm import InstrumentedAttribute

from app.db.metrics_tables import (
    AlertStateRow,
    Pi0Version,
    WindowMetrics,
    WindowMetricValue,
    WorkerHeartbeat,
)
from app.db.repositories.base import Repository
from app.db.repositories.scrape_rows import (
    AlertRow,
    AwaitingLabels,
    Backlog,
    LatestEstimate,
    LatestValue,
    LatestWindow,
    ModelState,
    WorkerTotals,
)
from app.db.repositories.window_metrics import SeriesValue
from app.db.tables import MonitoredModel, Window


def _is_latest_window(
    table: type[WindowMetrics] | type[WindowMetricValue], *where: ColumnElement[bool]
) -> ColumnElement[bool]:
    """Join condition: ``table``'s row belongs to the newest window of its (model, segment)
    (among the windows ``where`` holds for)."""
    latest = (
        select(
            WindowMetrics.model_id,
            WindowMetrics.segment,
            func.max(WindowMetrics.window_start).label("window_start"),
        )
        .where(*where)
        .group_by(WindowMetrics.model_id, WindowMetrics.segment)
        .subquery("latest")
    )
    return and_(
        latest.c.model_id == table.model_id,
        latest.c.segment == table.segment,
        latest.c.window_start == table.window_start,
    )


ALL_SEGMENTS = "all"
SegmentScope = Literal["every", "all", "others"]
"""Which segments a detail read covers: every one, the segment "all" alone, or all but it."""


def _in_scope(column: InstrumentedAttribute[str], scope: SegmentScope) -> ColumnElement[bool]:
    if scope == "all":
        return column == ALL_SEGMENTS
    if scope == "others":
        return column != ALL_SEGMENTS
    return true()


# A window the early gauges may describe: estimated, not judged yet.
_ESTIMATED_EARLY = (WindowMetrics.early.is_not(None), WindowMetrics.judged_at.is_(None))


class ObservabilityRepository(Repository):
    """The collector's reads (and the API's alert summary) inside the caller's transaction."""

    def latest_windows(self, scope: SegmentScope = "every") -> list[LatestWindow]:
        """The newest window of every (model, segment) (of the segments in ``scope``)."""
        rows = self.session.execute(
            select(
                MonitoredModel.name,
                WindowMetrics.segment,
                WindowMetrics.window_start,
                WindowMetrics.computed_at,
                WindowMetrics.pi,
                WindowMetrics.label_coverage,
                WindowMetrics.labelled,
                WindowMetrics.positives,
                WindowMetrics.verdict,
                WindowMetrics.mature,
            )
            .join(MonitoredModel, MonitoredModel.id == WindowMetrics.model_id)
            .where(_is_latest_window(WindowMetrics), _in_scope(WindowMetrics.segment, scope))
            .order_by(MonitoredModel.name, WindowMetrics.segment)
        )
        return [LatestWindow(*tuple(row)) for row in rows]

    def latest_values(self, scope: SegmentScope = "every") -> list[LatestValue]:
        """Every metric row of the newest mature window of every (model, segment) in ``scope``:
        an immature window's measured values rest on the labels that came first, and are not
        shown."""
        value = WindowMetricValue
        rows = self.session.execute(
            select(
                MonitoredModel.name,
                value.segment,
                *(getattr(value, name) for name in SeriesValue._fields),
            )
            .join(MonitoredModel, MonitoredModel.id == value.model_id)
            .where(
                _is_latest_window(value, WindowMetrics.mature.is_(True)),
                _in_scope(value.segment, scope),
            )
            .order_by(MonitoredModel.name, value.segment, value.metric)
        )
        return [LatestValue(row[0], row[1], SeriesValue._make(row[2:])) for row in rows]

    def latest_nowcasts(self, scope: SegmentScope = "every") -> list[LatestEstimate]:
        """The newest window with a nowcast of every (model, segment) in ``scope``."""
        estimated = WindowMetrics.nowcast_reference_version.is_not(None)
        return self._latest_estimates(WindowMetrics.nowcast, scope, estimated)

    def latest_early(self, scope: SegmentScope = "every") -> list[LatestEstimate]:
        """The newest window with an early estimate of every (model, segment) in ``scope``."""
        return self._latest_estimates(WindowMetrics.early, scope, *_ESTIMATED_EARLY)

    def _latest_estimates(
        self,
        estimate: InstrumentedAttribute[dict[str, Any] | None],
        scope: SegmentScope,
        *estimated: ColumnElement[bool],
    ) -> list[LatestEstimate]:
        """The ``estimate`` column of the newest window of every (model, segment) in ``scope``
        among those ``estimated`` holds for."""
        rows = self.session.execute(
            select(MonitoredModel.name, WindowMetrics.segment, WindowMetrics.window_start, estimate)
            .join(MonitoredModel, MonitoredModel.id == WindowMetrics.model_id)
            .where(
                _is_latest_window(WindowMetrics, *estimated),
                _in_scope(WindowMetrics.segment, scope),
            )
            .order_by(MonitoredModel.name, WindowMetrics.segment)
        )
        return [LatestEstimate(*row) for row in rows if row[3] is not None]

    def segment_pairs(self) -> tuple[int, int]:
        """How many (model, segment)s have a window: of the segment "all", and of the others."""
        pairs = select(WindowMetrics.model_id, WindowMetrics.segment).distinct().subquery("pairs")
        is_all = case((pairs.c.segment == ALL_SEGMENTS, 1), else_=0)
        row = self.session.execute(select(func.sum(is_all), func.count()).select_from(pairs)).one()
        pairs_all, total = int(row[0] or 0), int(row[1])
        return pairs_all, total - pairs_all

    def alert_rows(self, model_id: int | None = None) -> list[AlertRow]:
        """Every (model, segment)'s alert state (of one model if given), with the verdict of its
        newest judged window."""
        state = AlertStateRow
        query = (
            select(
                MonitoredModel.name,
                state.segment,
                state.state,
                state.signals,
                state.drop_statistic,
                state.threshold,
                state.last_window,
                state.reference_value,
                state.early_statistic,
                WindowMetrics.verdict,
            )
            .join(MonitoredModel, MonitoredModel.id == state.model_id)
            .outerjoin(
                WindowMetrics,
                and_(
                    WindowMetrics.model_id == state.model_id,
                    WindowMetrics.segment == state.segment,
                    WindowMetrics.window_start == state.last_window,
                ),
            )
            .order_by(MonitoredModel.name, state.segment)
        )
        if model_id is not None:
            query = query.where(state.model_id == model_id)
        return [AlertRow(*tuple(row)) for row in self.session.execute(query)]

    def awaiting_labels(self, model_id: int | None = None) -> list[AwaitingLabels]:
        """Per (model, segment) (of one model if given): windows whose labels are not complete
        (the worker's ``mature`` flag: label coverage or horizon) and have no verdict yet, and
        their rows."""
        immature = WindowMetrics.mature.is_(False)
        query = (
            select(
                MonitoredModel.name,
                WindowMetrics.segment,
                func.count(),
                func.coalesce(func.sum(WindowMetrics.rows_total), 0),
            )
            .join(MonitoredModel, MonitoredModel.id == WindowMetrics.model_id)
            .where(WindowMetrics.judged_at.is_(None), immature)
            .group_by(MonitoredModel.name, WindowMetrics.segment)
            .order_by(MonitoredModel.name, WindowMetrics.segment)
        )
        if model_id is not None:
            query = query.where(WindowMetrics.model_id == model_id)
        rows = self.session.execute(query)
        return [
            AwaitingLabels(name, segment, int(n), int(total)) for name, segment, n, total in rows
        ]

    def model_states(self) -> list[ModelState]:
        """Every model with its granularity, alert floor and newest pi0 version's value."""
        newest = (
            select(Pi0Version.model_id, func.max(Pi0Version.version).label("version"))
            .group_by(Pi0Version.model_id)
            .subquery("newest")
        )
        rows = self.session.execute(
            select(
                MonitoredModel.name,
                MonitoredModel.granularity,
                MonitoredModel.alert_floor,
                Pi0Version.value,
            )
            .outerjoin(newest, newest.c.model_id == MonitoredModel.id)
            .outerjoin(
                Pi0Version,
                and_(
                    Pi0Version.model_id == newest.c.model_id,
                    Pi0Version.version == newest.c.version,
                ),
            )
            .order_by(MonitoredModel.name)
        )
        return [ModelState(*row) for row in rows]

    def backlog(self) -> Backlog:
        """How many windows wait for the worker, and the oldest one's last update."""
        count, oldest = self.session.execute(
            select(func.count(), func.min(Window.updated_at)).where(
                Window.dirty_version > Window.computed_version
            )
        ).one()
        return Backlog(int(count), oldest)

    def worker_totals(self, *, now: datetime, unstamped_since: datetime) -> WorkerTotals:
        """Heartbeat totals; a worker is alive at ``now`` if it has not stopped and its last
        heartbeat vouches for it until ``now`` or later (``alive_until``), or, in a row written
        before heartbeats carried that (migration 0021), was seen at or after
        ``unstamped_since``."""
        beat = WorkerHeartbeat
        vouched = or_(
            beat.alive_until >= now,
            and_(beat.alive_until.is_(None), beat.last_seen_at >= unstamped_since),
        )
        alive, computed, failures, last_seen = self.session.execute(
            select(
                func.count().filter(vouched, beat.stopped_at.is_(None)),
                func.coalesce(func.sum(beat.windows_computed), 0),
                func.coalesce(func.sum(beat.failures), 0),
                func.max(beat.last_seen_at),
            )
        ).one()
        return WorkerTotals(int(alive), int(computed), int(failures), last_seen)
