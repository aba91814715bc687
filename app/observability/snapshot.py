"""What a scrape reads from the database, in one transaction: the state every scrape exports
(``Snapshot``) and the newest windows' values of one part of the segments (``Detail``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from app.db.repositories import observability as repository
from app.db.repositories import scrape_rows
from app.monitoring.vocabulary import WINDOW_LENGTH

# The models table's granularities; CalmonStaleWindow compares window age with this length.
WINDOW_SECONDS = {name: length.total_seconds() for name, length in WINDOW_LENGTH.items()}
# models.alert_floor is a floor on this calibrated metric (docs/interfaces.md section 2).
ALERT_FLOOR_METRIC = "average_precision"
# A worker is alive until its last heartbeat's alive_until (two of its heartbeat intervals,
# app.worker.loop.ALIVE_HEARTBEATS); a row written before migration 0021 has none, and is
# judged by the former rule: a heartbeat at most this many lease periods old.
UNSTAMPED_ALIVE_LEASE_PERIODS = 3


@dataclass(frozen=True)
class Snapshot:
    """What every scrape exports, whatever the series budget: read in one transaction."""

    taken_at: datetime
    models: Sequence[scrape_rows.ModelState]
    alerts: Sequence[scrape_rows.AlertRow]
    awaiting: Sequence[scrape_rows.AwaitingLabels]
    backlog: scrape_rows.Backlog
    workers: scrape_rows.WorkerTotals
    segment_pairs: tuple[int, int]


@dataclass(frozen=True)
class Detail:
    """The newest windows' detail of some segments: what the series budget may leave out."""

    windows: Sequence[scrape_rows.LatestWindow]
    values: Sequence[scrape_rows.LatestValue]
    nowcasts: Sequence[scrape_rows.LatestEstimate]
    early: Sequence[scrape_rows.LatestEstimate]


def worker_totals(
    session: Session, *, now: datetime, lease_seconds: float
) -> scrape_rows.WorkerTotals:
    """The workers' totals, each alive or dead at ``now`` by its own last heartbeat."""
    unstamped_since = now - timedelta(seconds=UNSTAMPED_ALIVE_LEASE_PERIODS * lease_seconds)
    reads = repository.ObservabilityRepository(session)
    return reads.worker_totals(now=now, unstamped_since=unstamped_since)


def read_snapshot(session: Session, *, now: datetime, lease_seconds: float) -> Snapshot:
    """Read the state every scrape exports."""
    reads = repository.ObservabilityRepository(session)
    return Snapshot(
        taken_at=now,
        models=reads.model_states(),
        alerts=reads.alert_rows(),
        awaiting=reads.awaiting_labels(),
        backlog=reads.backlog(),
        workers=worker_totals(session, now=now, lease_seconds=lease_seconds),
        segment_pairs=reads.segment_pairs(),
    )


def read_detail(session: Session, scope: repository.SegmentScope) -> Detail:
    """Read the newest windows' detail of the segments in ``scope``."""
    reads = repository.ObservabilityRepository(session)
    return Detail(
        windows=reads.latest_windows(scope),
        values=reads.latest_values(scope),
        nowcasts=reads.latest_nowcasts(scope),
        early=reads.latest_early(scope),
    )
