"""The tables the monitoring worker writes (docs/interfaces.md section 2).

``window_metrics`` holds one row per (model, window, segment) with the whole evaluation as JSON
and the curve sketch, so a pi0 change is recomputed from the sketch without re-reading raw rows,
and the verdict issued when the window was judged. ``window_metric_values`` repeats each metric as
a plain row so SQL readers (Grafana, the Prometheus collector) never parse JSON.
``reference_specs``, ``segment_references`` and ``alert_states`` are the drop detector's state
(app/monitoring); ``score_bins`` the bins every window's scores are counted on (the nowcast).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    false,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base
from app.db.types import UtcDateTime, utcnow
from app.monitoring.vocabulary import ALERT_STATES, REFERENCE_KINDS, VERDICTS


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class WindowMetrics(Base):
    """The evaluation of one segment of one window, at the model's current pi0 version."""

    __tablename__ = "window_metrics"
    __table_args__ = (
        CheckConstraint(_in("verdict", VERDICTS), name="verdict"),
        Index(None, "model_id", "segment", "window_start"),
    )

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    window_start: Mapped[datetime] = mapped_column(UtcDateTime, primary_key=True)
    segment: Mapped[str] = mapped_column(String(100), primary_key=True)
    rows_total: Mapped[int] = mapped_column(BigInteger)
    labelled: Mapped[int] = mapped_column(BigInteger)
    positives: Mapped[int] = mapped_column(BigInteger)
    negatives: Mapped[int] = mapped_column(BigInteger)
    label_coverage: Mapped[float | None] = mapped_column(Double)
    pi: Mapped[float | None] = mapped_column(Double)
    pi0: Mapped[float | None] = mapped_column(Double)
    pi0_version: Mapped[int | None] = mapped_column(Integer)
    threshold: Mapped[float] = mapped_column(Double)
    # Decided by the worker (app/monitoring/maturity.py): an immature window's measured values
    # rest on its early labels, and readers (API, /metrics, the dashboard) withhold them.
    mature: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    verdict: Mapped[str] = mapped_column(String(24))
    verdict_reason: Mapped[str | None] = mapped_column(Text)
    # Set when the verdict was issued (the window was mature and after its reference): from
    # then on the verdict is history and recomputations keep it (app/monitoring/verdicts.py).
    judged_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    reference_version: Mapped[int | None] = mapped_column(Integer)
    evidence: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    intervals: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    decomposition: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    sketch: Mapped[bytes | None] = mapped_column(LargeBinary)
    # Calibrated intervals at priors around pi0 (app.metrics.prior_grid): a pi0 move
    # interpolates them instead of rerunning the bootstrap.
    interval_grid: Mapped[bytes | None] = mapped_column(LargeBinary)
    # Every row of the segment, labelled or not, counted on the model's score bins
    # (app.metrics.ScoreHistogram), and the rows at or above the threshold: what the nowcast reads.
    score_counts: Mapped[bytes | None] = mapped_column(LargeBinary)
    flagged: Mapped[int | None] = mapped_column(BigInteger)
    # The label-free estimates (app/monitoring/nowcast.py) against the segment's reference of
    # ``nowcast_reference_version``; kept beside the realised values once labels arrive.
    nowcast: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    nowcast_reference_version: Mapped[int | None] = mapped_column(Integer)
    # The segment's labels by the look they arrived at (app.metrics.reporting.Arrivals), and
    # what they are expected to show once complete (app/monitoring/early.py), with the window's
    # early evidence about a drop: set while the window is not judged yet.
    arrivals: Mapped[bytes | None] = mapped_column(LargeBinary)
    early: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    source_version: Mapped[int] = mapped_column(BigInteger)
    computed_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    duration_seconds: Mapped[float] = mapped_column(Double)


class WindowMetricValue(Base):
    """One metric of one window segment: regular and calibrated values, intervals, effects."""

    __tablename__ = "window_metric_values"
    __table_args__ = (
        ForeignKeyConstraint(
            ["model_id", "window_start", "segment"],
            [WindowMetrics.model_id, WindowMetrics.window_start, WindowMetrics.segment],
            ondelete="CASCADE",
        ),
    )

    model_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UtcDateTime, primary_key=True)
    segment: Mapped[str] = mapped_column(String(100), primary_key=True)
    metric: Mapped[str] = mapped_column(String(40), primary_key=True)
    regular: Mapped[float | None] = mapped_column(Double)
    regular_ci_low: Mapped[float | None] = mapped_column(Double)
    regular_ci_high: Mapped[float | None] = mapped_column(Double)
    calibrated: Mapped[float | None] = mapped_column(Double)
    calibrated_ci_low: Mapped[float | None] = mapped_column(Double)
    calibrated_ci_high: Mapped[float | None] = mapped_column(Double)
    prior_effect: Mapped[float | None] = mapped_column(Double)
    performance_effect: Mapped[float | None] = mapped_column(Double)
    undefined_reason: Mapped[str | None] = mapped_column(Text)


class Pi0Version(Base):
    """A value of a model's reference prior and the history it was estimated from."""

    __tablename__ = "pi0_versions"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    value: Mapped[float] = mapped_column(Double)
    policy: Mapped[str] = mapped_column(String(16))
    windows_used: Mapped[int] = mapped_column(Integer)
    rows_used: Mapped[int] = mapped_column(BigInteger)
    positives_used: Mapped[int] = mapped_column(BigInteger)
    computed_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )


class WorkerHeartbeat(Base):
    """A worker process's self-metrics, read by the API's Prometheus collector."""

    __tablename__ = "worker_heartbeats"

    worker_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime)
    # Set by the worker's last heartbeat on a graceful stop (SIGTERM): no longer alive.
    stopped_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # Two of the worker's heartbeat intervals after last_seen_at: dead after that unless it
    # beats again (migration 0021; NULL in rows written before).
    alive_until: Mapped[datetime | None] = mapped_column(UtcDateTime)
    windows_computed: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    failures: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    last_duration_seconds: Mapped[float | None] = mapped_column(Double)
    # Raw prediction rows read and windows recomputed from sketches: they prove a pi0 move
    # re-reads nothing, and show an operator where the worker's time goes.
    rows_read: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    sketch_recomputations: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class ReferenceSpec(Base):
    """A version of a model's reference: which windows every segment is judged against."""

    __tablename__ = "reference_specs"
    __table_args__ = (CheckConstraint(_in("kind", REFERENCE_KINDS), name="kind"),)

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    # Inclusive days in the model's time zone (automatic: the first day; period: both ends).
    start_date: Mapped[date | None] = mapped_column(Date)
    end_date: Mapped[date | None] = mapped_column(Date)
    # recent: the windows that started before this instant.
    as_of: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )


class SegmentReference(Base):
    """One segment's frozen reference under a reference version: its windows, pooled."""

    __tablename__ = "segment_references"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    segment: Mapped[str] = mapped_column(String(100), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    first_window: Mapped[datetime] = mapped_column(UtcDateTime)
    last_window: Mapped[datetime] = mapped_column(UtcDateTime)
    windows: Mapped[int] = mapped_column(Integer)
    labelled: Mapped[int] = mapped_column(BigInteger)
    positives: Mapped[int] = mapped_column(BigInteger)
    sketch: Mapped[bytes] = mapped_column(LargeBinary)
    # The reference windows' labelled rows on the model's score bins, pooled (the class-
    # conditional score distributions a nowcast fits); null until every window has them.
    score_counts: Mapped[bytes | None] = mapped_column(LargeBinary)
    frozen_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class ScoreBins(Base):
    """A model's score bins: cut once, from the first window with enough rows, and kept, so
    that every window's score counts add up (app.metrics.bin_edges)."""

    __tablename__ = "score_bins"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    edges: Mapped[bytes] = mapped_column(LargeBinary)
    window_start: Mapped[datetime] = mapped_column(UtcDateTime)
    rows_used: Mapped[int] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )


class AlertStateRow(Base):
    """The current alert state of one (model, segment): the drop detector after its newest
    judged window."""

    __tablename__ = "alert_states"
    __table_args__ = (CheckConstraint(_in("state", ALERT_STATES), name="state"),)

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    segment: Mapped[str] = mapped_column(String(100), primary_key=True)
    reference_version: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    signals: Mapped[str] = mapped_column(String(32), default="", server_default="")
    drop_statistic: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    gain_statistic: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    paging: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    gaining: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    threshold: Mapped[float | None] = mapped_column(Double)
    evidence_windows: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_window: Mapped[datetime | None] = mapped_column(UtcDateTime)
    episode_start: Mapped[datetime | None] = mapped_column(UtcDateTime)
    reference_value: Mapped[float | None] = mapped_column(Double)
    reason: Mapped[str | None] = mapped_column(Text)
    # The drop statistic continued through the windows not judged yet, with their early
    # evidence (app/monitoring/early.py), at the look ``early_as_of``; ``early_paging`` is its
    # hysteresis across looks.
    early_statistic: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    early_paging: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    early_windows: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    early_as_of: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # The judged detector's own reason; ``reason`` is the settled one a user reads.
    judged_reason: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)
