"""Read-only queries behind the Prometheus collector (app/observability/collector.py).

Every API replica answers a scrape from the same rows, so the exported values do not depend on
which process computed a window. Each method is one or two queries over all models at once:
a scrape costs a constant number of round trips, not one per model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, case, func, or_, select, true
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.db.metrics_tables import (
    AlertStateRow,
    Pi0Version,
    WindowMetrics,
    WindowMetricValue,
    WorkerHeartbeat,
)
from app.db.tables import MonitoredModel, Window


@dataclass(frozen=True, slots=True)
class LatestWindow:
    """The newest stored window of one (model, segment)."""

    model: str
    segment: str
    window_start: datetime
    computed_at: datetime
    pi: float | None
    label_coverage: float | None
    labelled: int
    positives: int
    verdict: str
    mature: bool


@dataclass(frozen=True, slots=True)
class LatestValue:
    """One metric of the newest mature window of one (model, segment)."""

    model: str
    segment: str
    window_start: datetime
    metric: str
    regular: float | None
    regular_ci_low: float | None
    regular_ci_high: float | None
    calibrated: float | None
    calibrated_ci_low: float | None
    calibrated_ci_high: float | None
    prior_effect: float | None
    performance_effect: float | None


@dataclass(frozen=True, slots=True)
class LatestNowcast:
    """The newest window with a label-free estimate of one (model, segment)."""

    model: str
    segment: str
    window_start: datetime
    nowcast: dict[str, Any]


@dataclass(frozen=True, slots=True)
class LatestEarly:
    """The newest window of one (model, segment) with an early estimate."""

    model: str
    segment: str
    window_start: datetime
    early: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AlertRow:
    """The alert state of one (model, segment) and the newest judged window it rests on."""

    model: str
    segment: str
    state: str
    signals: str
    drop_statistic: float
    threshold: float | None
    last_window: datetime | None
    reference_value: float | None
    early_statistic: float
    verdict: str | None


@dataclass(frozen=True, slots=True)
class AwaitingLabels:
    """Windows of one (model, segment) not mature yet, and their rows."""

    model: str
    segment: str
    windows: int
    rows: int


@dataclass(frozen=True, slots=True)
class ModelState:
    """Per-model settings and the current reference prior."""

    name: str
    granularity: str
    alert_floor: float | None
    pi0: float | None


@dataclass(frozen=True, slots=True)
class Backlog:
    """The worker's backlog over every model: dirty windows, and when the oldest of them was
    last touched (a model's own queue is window_queue.ModelQueue)."""

    dirty_windows: int
    oldest_dirty_updated_at: datetime | None


@dataclass(frozen=True, slots=True)
class WorkerTotals:
    """All workers' heartbeats summed (worker ids churn, so no per-worker series)."""

    alive: int
    windows_computed: int
    failures: int
    last_seen_at: datetime | None


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


class ObservabilityRepository:
    """The collector's reads (and the API's alert summary) inside the caller's transaction."""

    def __init__(self, session: Session) -> None:
        self.session = session

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
                value.window_start,
                value.metric,
                value.regular,
                value.regular_ci_low,
                value.regular_ci_high,
                value.calibrated,
                value.calibrated_ci_low,
                value.calibrated_ci_high,
                value.prior_effect,
                value.performance_effect,
            )
            .join(MonitoredModel, MonitoredModel.id == value.model_id)
            .where(
                _is_latest_window(value, WindowMetrics.mature.is_(True)),
                _in_scope(value.segment, scope),
            )
            .order_by(MonitoredModel.name, value.segment, value.metric)
        )
        return [LatestValue(*tuple(row)) for row in rows]

    def latest_nowcasts(self, scope: SegmentScope = "every") -> list[LatestNowcast]:
        """The newest window with a nowcast of every (model, segment) in ``scope``."""
        estimated = WindowMetrics.nowcast_reference_version.is_not(None)
        latest = (
            select(
                WindowMetrics.model_id,
                WindowMetrics.segment,
                func.max(WindowMetrics.window_start).label("window_start"),
            )
            .where(estimated, _in_scope(WindowMetrics.segment, scope))
            .group_by(WindowMetrics.model_id, WindowMetrics.segment)
            .subquery("latest")
        )
        rows = self.session.execute(
            select(
                MonitoredModel.name,
                WindowMetrics.segment,
                WindowMetrics.window_start,
                WindowMetrics.nowcast,
            )
            .join(MonitoredModel, MonitoredModel.id == WindowMetrics.model_id)
            .join(
                latest,
                and_(
                    latest.c.model_id == WindowMetrics.model_id,
                    latest.c.segment == WindowMetrics.segment,
                    latest.c.window_start == WindowMetrics.window_start,
                ),
            )
            .order_by(MonitoredModel.name, WindowMetrics.segment)
        )
        return [LatestNowcast(*row) for row in rows if row[3] is not None]

    def latest_early(self, scope: SegmentScope = "every") -> list[LatestEarly]:
        """The newest window with an early estimate of every (model, segment) in ``scope``."""
        rows = self.session.execute(
            select(
                MonitoredModel.name,
                WindowMetrics.segment,
                WindowMetrics.window_start,
                WindowMetrics.early,
            )
            .join(MonitoredModel, MonitoredModel.id == WindowMetrics.model_id)
            .where(
                _is_latest_window(
                    WindowMetrics,
                    WindowMetrics.early.is_not(None),
                    WindowMetrics.judged_at.is_(None),
                ),
                _in_scope(WindowMetrics.segment, scope),
            )
            .order_by(MonitoredModel.name, WindowMetrics.segment)
        )
        return [LatestEarly(*row) for row in rows if row[3] is not None]

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
