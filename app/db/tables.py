"""The tables of docs/interfaces.md section 2 that the service foundation owns.

Enumerations are strings guarded by CHECK constraints rather than native enums: adding a value
later is a one-line migration on both PostgreSQL and SQLite.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Date,
    Double,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base
from app.db.types import UtcDateTime, utcnow
from app.input_rules import MAX_ENTITY_LENGTH
from app.monitoring.vocabulary import GRANULARITIES, LABEL_SOURCE_CODES, PI0_POLICIES


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class MonitoredModel(Base):
    """A classifier under monitoring and how its windows are evaluated."""

    __tablename__ = "models"
    __table_args__ = (
        CheckConstraint(_in("granularity", GRANULARITIES), name="granularity"),
        CheckConstraint(_in("pi0_policy", PI0_POLICIES), name="pi0_policy"),
        CheckConstraint("pi0_fixed IS NULL OR (pi0_fixed > 0 AND pi0_fixed < 1)", name="pi0_fixed"),
        CheckConstraint(
            "(pi0_policy <> 'fixed' OR pi0_fixed IS NOT NULL) AND (pi0_policy <> 'reference' OR "
            "(pi0_reference_start IS NOT NULL AND pi0_reference_end IS NOT NULL "
            "AND pi0_reference_start <= pi0_reference_end))",
            name="pi0_policy_fields",
        ),
        CheckConstraint(
            "min_label_coverage >= 0 AND min_label_coverage <= 1", name="min_label_coverage"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    threshold: Mapped[float] = mapped_column(Double)
    granularity: Mapped[str] = mapped_column(String(8))
    timezone: Mapped[str] = mapped_column(String(64))
    pi0_policy: Mapped[str] = mapped_column(String(16))
    pi0_lookback_windows: Mapped[int | None] = mapped_column(Integer)
    pi0_reference_start: Mapped[date | None] = mapped_column(Date)
    pi0_reference_end: Mapped[date | None] = mapped_column(Date)
    pi0_fixed: Mapped[float | None] = mapped_column(Double)
    min_label_coverage: Mapped[float] = mapped_column(Double)
    # Monitoring settings added by later migrations carry no CHECK constraint (the API validates
    # them): on SQLite a new constraint means rebuilding `models`.
    pi0_tolerance: Mapped[float] = mapped_column(Double, default=0.1, server_default="0.1")
    alert_floor: Mapped[float | None] = mapped_column(Double)
    reference_windows: Mapped[int] = mapped_column(Integer, default=14, server_default="14")
    reference_min_positives: Mapped[int] = mapped_column(Integer, default=500, server_default="500")
    detection_drop: Mapped[float] = mapped_column(Double, default=0.3, server_default="0.3")
    retention_windows: Mapped[int | None] = mapped_column(Integer)
    label_horizon_days: Mapped[int | None] = mapped_column(Integer)
    # The fraud team's alert budget per window and the cost of reviewing one alert (NULL: off).
    alert_capacity: Mapped[int | None] = mapped_column(Integer)
    review_cost: Mapped[float | None] = mapped_column(Double)
    # Where retention has deleted raw rows up to: older windows are never recomputed from rows
    # (their stored metrics stand) and refuse new rows.
    raw_kept_from: Mapped[datetime | None] = mapped_column(UtcDateTime)
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, onupdate=utcnow, server_default=func.now()
    )


class Batch(Base):
    """One accepted ingest request, kept so that a retry with the same batch_id is idempotent."""

    __tablename__ = "batches"

    # Keyed by the model first, like every per-model table (docs/scaling.md, Citus).
    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    batch_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    row_count: Mapped[int] = mapped_column(Integer)
    inserted_rows: Mapped[int] = mapped_column(Integer)
    updated_rows: Mapped[int] = mapped_column(Integer)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )


# Byte order on PostgreSQL: the cheapest comparison for a key that is only ever matched and
# sorted (the database's default, a linguistic collation, cost 8-70 ms per 50,000-row batch).
# SQLite compares bytes already and has no collation called "C".
PredictionId = String(200).with_variant(String(200, collation="C"), "postgresql")


class Prediction(Base):
    """One scored (and possibly later labelled) prediction.

    The primary key is the client's id within the model, so a late label is an upsert on it and
    no surrogate key (with its own index) slows the bulk write. model_id has no foreign key:
    checking it cost one trigger call per row; the ingest takes one FOR KEY SHARE lock of the
    model row per batch instead, and deleting a model deletes its predictions explicitly.

    On PostgreSQL the table is partitioned by model, then by week of window_start (migration
    0011, app/db/partitions.py): its primary key there is (model_id, window_start,
    prediction_id), and PredictionKey keeps the id unique within the model.
    """

    __tablename__ = "predictions"
    __table_args__ = (
        CheckConstraint("label IS NULL OR label IN (0, 1)", name="label"),
        CheckConstraint(
            f"label_source IN ({', '.join(map(str, LABEL_SOURCE_CODES.values()))})",
            name="label_source",
        ),
        # A label's time and source describe the label: none without one.
        CheckConstraint(
            "label IS NOT NULL OR (labelled_at IS NULL AND label_source IS NULL)",
            name="label_set",
        ),
        # PostgreSQL's primary key (model_id, window_start, prediction_id) serves the same
        # reads there (migration 0011); app.db.schema's filter leaves it out of the comparison.
        Index(None, "model_id", "window_start", info={"sqlite_only": True}),
    )

    model_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    prediction_id: Mapped[str] = mapped_column(PredictionId, primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UtcDateTime)
    ts: Mapped[datetime] = mapped_column(UtcDateTime)
    score: Mapped[float] = mapped_column(Double)
    label: Mapped[int | None] = mapped_column(SmallInteger)
    segment: Mapped[str] = mapped_column(String(100), default="all", server_default="all")
    # When the label arrived (the first arrival of its value) and where from
    # (app.monitoring.vocabulary.LABEL_SOURCE_CODES); NULL for labels stored before migration
    # 0013, whose arrival is unknown.
    labelled_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    label_source: Mapped[int | None] = mapped_column(SmallInteger)
    # The transaction's value in the model's currency and the card or account it was made
    # with, when the client sends them (migration 0019; checked by app.ingest.row_fields).
    amount: Mapped[float | None] = mapped_column(Double)
    entity: Mapped[str | None] = mapped_column(String(MAX_ENTITY_LENGTH))


class PredictionKey(Base):
    """PostgreSQL only: the window of each stored id, partitioned by model.

    What the partitioned predictions table cannot hold itself: the id's uniqueness within its
    model, and the week table a late label's row is in (one probe here, then one in that week).
    """

    __tablename__ = "prediction_keys"
    __table_args__ = (
        Index(None, "model_id", "window_start"),
        {"info": {"postgresql_only": True}},  # migrations/env.py skips it on SQLite
    )

    model_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    prediction_id: Mapped[str] = mapped_column(PredictionId, primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UtcDateTime)


class ModelPurge(Base):
    """A deleted model whose predictions are still being removed, a bounded chunk at a time
    (by the worker): the model row and everything else of it went at once (PostgreSQL)."""

    __tablename__ = "model_purges"

    model_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String(64))
    requested_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )


class ModelSegment(Base):
    """A segment name a model has received rows for: counted against the model's segment cap
    (CALMON_MAX_SEGMENTS_PER_MODEL) without scanning its predictions."""

    __tablename__ = "model_segments"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    segment: Mapped[str] = mapped_column(String(100), primary_key=True)


class Window(Base):
    """A model's time window; dirty while dirty_version > computed_version (worker's queue)."""

    __tablename__ = "windows"

    model_id: Mapped[int] = mapped_column(
        ForeignKey("models.id", ondelete="CASCADE"), primary_key=True
    )
    window_start: Mapped[datetime] = mapped_column(UtcDateTime, primary_key=True)
    dirty_version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    computed_version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # The dirty version a window was parked at (its computation failed for a reason retrying
    # cannot change); claimable again once dirty_version moves past it.
    parked_version: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, onupdate=utcnow, server_default=func.now()
    )
    # The newest event instant ingest brought into the window: a row's timestamp, a label's
    # labelled_at. The model's clock is the newest over its windows: how far its data has
    # come, whatever the wall clock of the machine says.
    newest_event: Mapped[datetime | None] = mapped_column(UtcDateTime)


class ApiToken(Base):
    """A bearer token: only the SHA-256 of its secret is stored, never the token itself."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    prefix: Mapped[str] = mapped_column(String(16))
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[str] = mapped_column(String(100))
    # The models it may see, comma-separated names and prefixes ending in '*'; NULL: every model.
    models: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(
        UtcDateTime, default=utcnow, server_default=func.now()
    )
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class AuditEvent(Base):
    """An admin act: who (the token's name and id), when, what, on which model, what changed.

    Written in the act's own transaction, so an act is never without its record. Never holds a
    secret: a minted token is recorded by id, name, prefix, scopes and models.
    """

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    actor: Mapped[str] = mapped_column(String(100))
    token_id: Mapped[int | None] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(40))
    # The model acted on; NULL for a token's minting or revocation (its models are in detail).
    model: Mapped[str | None] = mapped_column(String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
