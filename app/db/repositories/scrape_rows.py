"""What a Prometheus scrape reads (app/db/repositories/observability.py returns them): plain
rows over all models at once, one type per question the collector asks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db.repositories.window_metrics import SeriesValue


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
    """One metric of the newest mature window of one (model, segment): its stored values as a
    series point reads them (one row type for a stored value, whoever reads it)."""

    model: str
    segment: str
    value: SeriesValue


@dataclass(frozen=True, slots=True)
class LatestEstimate:
    """The newest window of one (model, segment) with an estimate of one kind (the nowcast from
    its scores, or the early estimate from its labels so far), and that estimate as stored."""

    model: str
    segment: str
    window_start: datetime
    estimate: dict[str, Any]


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
