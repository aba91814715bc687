"""worker: window metrics, metric values, pi0 versions, heartbeats, model worker settings

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:00:00

The model settings are added without CHECK constraints on purpose: on SQLite a new constraint
means rebuilding ``models``, and with foreign keys on, dropping the old table would cascade into
every prediction. The API validates these values instead.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _model_settings() -> list[sa.Column[object]]:
    # Built afresh per call: a Column belongs to one Table, and the stairway test runs upgrade
    # more than once in one process.
    return [
        sa.Column("baseline_windows", sa.Integer(), server_default="7", nullable=False),
        sa.Column("min_history_windows", sa.Integer(), server_default="3", nullable=False),
        sa.Column("min_history_positives", sa.Integer(), server_default="30", nullable=False),
        sa.Column("pi0_tolerance", sa.Double(), server_default="0.1", nullable=False),
        sa.Column("alert_floor", sa.Double(), nullable=True),
    ]


def upgrade() -> None:
    for column in _model_settings():
        op.add_column("models", column)
    op.create_table(
        "window_metrics",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("segment", sa.String(length=100), nullable=False),
        sa.Column("rows_total", sa.BigInteger(), nullable=False),
        sa.Column("labelled", sa.BigInteger(), nullable=False),
        sa.Column("positives", sa.BigInteger(), nullable=False),
        sa.Column("negatives", sa.BigInteger(), nullable=False),
        sa.Column("label_coverage", sa.Double(), nullable=True),
        sa.Column("pi", sa.Double(), nullable=True),
        sa.Column("pi0", sa.Double(), nullable=True),
        sa.Column("pi0_version", sa.Integer(), nullable=True),
        sa.Column("threshold", sa.Double(), nullable=False),
        sa.Column("verdict", sa.String(length=24), nullable=False),
        sa.Column("verdict_reason", sa.Text(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("intervals", sa.JSON(), nullable=True),
        sa.Column("decomposition", sa.JSON(), nullable=True),
        sa.Column("sketch", sa.LargeBinary(), nullable=True),
        sa.Column("source_version", sa.BigInteger(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_seconds", sa.Double(), nullable=False),
        sa.CheckConstraint(
            "verdict IN ('stable', 'prior_shift', 'performance_drop', 'performance_gain', "
            "'both', 'insufficient_data')",
            name=op.f("ck_window_metrics_verdict"),
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_window_metrics_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "model_id", "window_start", "segment", name=op.f("pk_window_metrics")
        ),
    )
    op.create_index(
        op.f("ix_window_metrics_model_id_segment_window_start"),
        "window_metrics",
        ["model_id", "segment", "window_start"],
    )
    op.create_table(
        "window_metric_values",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("segment", sa.String(length=100), nullable=False),
        sa.Column("metric", sa.String(length=40), nullable=False),
        sa.Column("regular", sa.Double(), nullable=True),
        sa.Column("regular_ci_low", sa.Double(), nullable=True),
        sa.Column("regular_ci_high", sa.Double(), nullable=True),
        sa.Column("calibrated", sa.Double(), nullable=True),
        sa.Column("calibrated_ci_low", sa.Double(), nullable=True),
        sa.Column("calibrated_ci_high", sa.Double(), nullable=True),
        sa.Column("prior_effect", sa.Double(), nullable=True),
        sa.Column("performance_effect", sa.Double(), nullable=True),
        sa.Column("undefined_reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["model_id", "window_start", "segment"],
            ["window_metrics.model_id", "window_metrics.window_start", "window_metrics.segment"],
            name=op.f("fk_window_metric_values_model_id_window_metrics"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "model_id", "window_start", "segment", "metric", name=op.f("pk_window_metric_values")
        ),
    )
    op.create_table(
        "pi0_versions",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("value", sa.Double(), nullable=False),
        sa.Column("policy", sa.String(length=16), nullable=False),
        sa.Column("windows_used", sa.Integer(), nullable=False),
        sa.Column("rows_used", sa.BigInteger(), nullable=False),
        sa.Column("positives_used", sa.BigInteger(), nullable=False),
        sa.Column(
            "computed_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_pi0_versions_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "version", name=op.f("pk_pi0_versions")),
    )
    op.create_table(
        "worker_heartbeats",
        sa.Column("worker_id", sa.String(length=100), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("windows_computed", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("failures", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("last_duration_seconds", sa.Double(), nullable=True),
        sa.Column("rows_read", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("sketch_recomputations", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("worker_id", name=op.f("pk_worker_heartbeats")),
    )


def downgrade() -> None:
    op.drop_table("worker_heartbeats")
    op.drop_table("pi0_versions")
    op.drop_table("window_metric_values")
    op.drop_index(
        op.f("ix_window_metrics_model_id_segment_window_start"), table_name="window_metrics"
    )
    op.drop_table("window_metrics")
    # Plain DROP COLUMN (SQLite >= 3.35), never a batch rebuild of models: see the docstring.
    for column in reversed(_model_settings()):
        op.drop_column("models", column.name)
