"""drop detector: frozen references, alert states, verdicts issued once; trailing-baseline
settings removed

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 20:00:00

Windows are now judged against a frozen reference by a sequential detector (app/monitoring)
instead of against the trailing windows, so the settings of the trailing baseline
(baseline_windows, min_history_windows, min_history_positives) and the per-window gate
min_positives go, and the reference and detector settings come. Every existing model gets
reference version 1 (automatic: its first usable windows).

Verdicts stored before this revision have no ``judged_at``: the detector judges those windows
once, in window order, the next time the worker stores a window of their model.

On SQLite, dropping min_positives' CHECK and widening the verdict CHECK rebuild ``models`` and
``window_metrics`` (batch mode; migrations run with foreign keys off, see migrations/env.py).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_VERDICTS = (
    "'stable', 'prior_shift', 'performance_drop', 'performance_gain', 'both', 'insufficient_data'"
)
_NEW_VERDICTS = _OLD_VERDICTS + ", 'reference'"


def _new_model_settings() -> list[sa.Column[object]]:
    return [
        sa.Column("reference_windows", sa.Integer(), server_default="14", nullable=False),
        sa.Column("reference_min_positives", sa.Integer(), server_default="500", nullable=False),
        sa.Column("detection_drop", sa.Double(), server_default="0.3", nullable=False),
    ]


def _old_model_settings() -> list[sa.Column[object]]:
    return [
        sa.Column("baseline_windows", sa.Integer(), server_default="7", nullable=False),
        sa.Column("min_history_windows", sa.Integer(), server_default="3", nullable=False),
        sa.Column("min_history_positives", sa.Integer(), server_default="30", nullable=False),
    ]


def upgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.drop_constraint(op.f("ck_models_min_positives"), type_="check")
        batch.drop_column("min_positives")
        for column in _old_model_settings():
            batch.drop_column(column.name)
        for column in _new_model_settings():
            batch.add_column(column)
    with op.batch_alter_table("window_metrics") as batch:
        batch.add_column(sa.Column("judged_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("reference_version", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("evidence", sa.JSON(), nullable=True))
        batch.drop_constraint(op.f("ck_window_metrics_verdict"), type_="check")
        batch.create_check_constraint(op.f("ck_window_metrics_verdict"), f"verdict IN ({_NEW_VERDICTS})")
    op.create_table(
        "reference_specs",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("start_date", sa.Date(), nullable=True),
        sa.Column("end_date", sa.Date(), nullable=True),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.CheckConstraint(
            "kind IN ('automatic', 'period', 'recent')", name=op.f("ck_reference_specs_kind")
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_reference_specs_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "version", name=op.f("pk_reference_specs")),
    )
    op.create_table(
        "segment_references",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("segment", sa.String(length=100), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("first_window", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_window", sa.DateTime(timezone=True), nullable=False),
        sa.Column("windows", sa.Integer(), nullable=False),
        sa.Column("labelled", sa.BigInteger(), nullable=False),
        sa.Column("positives", sa.BigInteger(), nullable=False),
        sa.Column("sketch", sa.LargeBinary(), nullable=False),
        sa.Column("frozen_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_segment_references_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "model_id", "segment", "version", name=op.f("pk_segment_references")
        ),
    )
    op.create_table(
        "alert_states",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("segment", sa.String(length=100), nullable=False),
        sa.Column("reference_version", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("signals", sa.String(length=32), server_default="", nullable=False),
        sa.Column("drop_statistic", sa.Double(), server_default="0", nullable=False),
        sa.Column("gain_statistic", sa.Double(), server_default="0", nullable=False),
        sa.Column("paging", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("gaining", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("threshold", sa.Double(), nullable=True),
        sa.Column("evidence_windows", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_window", sa.DateTime(timezone=True), nullable=True),
        sa.Column("episode_start", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reference_value", sa.Double(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "state IN ('warming_up', 'ok', 'drop')", name=op.f("ck_alert_states_state")
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_alert_states_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "segment", name=op.f("pk_alert_states")),
    )
    op.execute(
        "INSERT INTO reference_specs (model_id, version, kind) "
        "SELECT id, 1, 'automatic' FROM models"
    )


def downgrade() -> None:
    op.drop_table("alert_states")
    op.drop_table("segment_references")
    op.drop_table("reference_specs")
    op.execute("UPDATE window_metrics SET verdict = 'stable' WHERE verdict = 'reference'")
    with op.batch_alter_table("window_metrics") as batch:
        batch.drop_constraint(op.f("ck_window_metrics_verdict"), type_="check")
        batch.create_check_constraint(op.f("ck_window_metrics_verdict"), f"verdict IN ({_OLD_VERDICTS})")
        batch.drop_column("evidence")
        batch.drop_column("reference_version")
        batch.drop_column("judged_at")
    with op.batch_alter_table("models") as batch:
        for column in _new_model_settings():
            batch.drop_column(column.name)
        batch.add_column(
            sa.Column("min_positives", sa.Integer(), server_default="20", nullable=False)
        )
        batch.create_check_constraint(op.f("ck_models_min_positives"), "min_positives >= 0")
        for column in _old_model_settings():
            batch.add_column(column)
