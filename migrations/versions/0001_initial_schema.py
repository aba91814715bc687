"""initial schema: models, batches, predictions, windows, api tokens

Revision ID: 0001
Revises:
Create Date: 2026-11-22 02:46:38

Datetimes are DateTime(timezone=True) here; the models wrap them in app.db.types.UtcDateTime,
which changes only how values are bound and read, not the column type.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.String(length=100), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("hash", name=op.f("uq_api_tokens_hash")),
    )
    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("threshold", sa.Double(), nullable=False),
        sa.Column("granularity", sa.String(length=8), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("pi0_policy", sa.String(length=16), nullable=False),
        sa.Column("pi0_lookback_windows", sa.Integer(), nullable=True),
        sa.Column("pi0_reference_start", sa.Date(), nullable=True),
        sa.Column("pi0_reference_end", sa.Date(), nullable=True),
        sa.Column("pi0_fixed", sa.Double(), nullable=True),
        sa.Column("min_positives", sa.Integer(), nullable=False),
        sa.Column("min_label_coverage", sa.Double(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.CheckConstraint(
            "(pi0_policy <> 'fixed' OR pi0_fixed IS NOT NULL) AND (pi0_policy <> 'reference' OR (pi0_reference_start IS NOT NULL AND pi0_reference_end IS NOT NULL AND pi0_reference_start <= pi0_reference_end))",
            name=op.f("ck_models_pi0_policy_fields"),
        ),
        sa.CheckConstraint(
            "granularity IN ('hour', 'day', 'week')", name=op.f("ck_models_granularity")
        ),
        sa.CheckConstraint(
            "pi0_policy IN ('historical', 'reference', 'fixed')", name=op.f("ck_models_pi0_policy")
        ),
        sa.CheckConstraint(
            "min_label_coverage >= 0 AND min_label_coverage <= 1",
            name=op.f("ck_models_min_label_coverage"),
        ),
        sa.CheckConstraint("min_positives >= 0", name=op.f("ck_models_min_positives")),
        sa.CheckConstraint(
            "pi0_fixed IS NULL OR (pi0_fixed > 0 AND pi0_fixed < 1)",
            name=op.f("ck_models_pi0_fixed"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_models")),
        sa.UniqueConstraint("name", name=op.f("uq_models_name")),
    )
    op.create_table(
        "batches",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("batch_id", sa.String(length=200), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("row_count", sa.Integer(), nullable=False),
        sa.Column("inserted_rows", sa.Integer(), nullable=False),
        sa.Column("updated_rows", sa.Integer(), nullable=False),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["model_id"], ["models.id"], name=op.f("fk_batches_model_id_models"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_batches")),
        sa.UniqueConstraint("model_id", "batch_id", name=op.f("uq_batches_model_id_batch_id")),
    )
    op.create_table(
        "predictions",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("prediction_id", sa.String(length=200), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("score", sa.Double(), nullable=False),
        sa.Column("label", sa.SmallInteger(), nullable=True),
        sa.Column("segment", sa.String(length=100), server_default="all", nullable=False),
        sa.CheckConstraint("label IS NULL OR label IN (0, 1)", name=op.f("ck_predictions_label")),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_predictions_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "prediction_id", name=op.f("pk_predictions")),
    )
    op.create_index(
        op.f("ix_predictions_model_id_window_start"), "predictions", ["model_id", "window_start"]
    )

    op.create_table(
        "windows",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("dirty_version", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("computed_version", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("lease_owner", sa.String(length=100), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["model_id"], ["models.id"], name=op.f("fk_windows_model_id_models"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("model_id", "window_start", name=op.f("pk_windows")),
    )


def downgrade() -> None:
    op.drop_table("windows")
    op.drop_index(op.f("ix_predictions_model_id_window_start"), table_name="predictions")
    op.drop_table("predictions")
    op.drop_table("batches")
    op.drop_table("models")
    op.drop_table("api_tokens")
