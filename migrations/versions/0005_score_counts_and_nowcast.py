"""score counts per window, score bins per model, nowcasts, the score_shift verdict

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 23:00:00

Every window segment now keeps its scores (labelled or not) counted on its model's score bins,
so that a window without labels gets a label-free estimate of its fraud rate and metrics (the
nowcast, app/monitoring/nowcast.py). Windows stored before this revision have no counts: the
worker re-dirties them once, when it cuts the model's bins, and fills them in from the raw rows.

On SQLite, widening the verdict CHECK rebuilds ``window_metrics`` (batch mode).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_VERDICTS = (
    "'stable', 'prior_shift', 'performance_drop', 'performance_gain', 'both', "
    "'insufficient_data', 'reference'"
)
_NEW_VERDICTS = _OLD_VERDICTS + ", 'score_shift'"


def upgrade() -> None:
    with op.batch_alter_table("window_metrics") as batch:
        batch.add_column(sa.Column("score_counts", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("flagged", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("nowcast", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("nowcast_reference_version", sa.Integer(), nullable=True))
        batch.drop_constraint(op.f("ck_window_metrics_verdict"), type_="check")
        batch.create_check_constraint(
            op.f("ck_window_metrics_verdict"), f"verdict IN ({_NEW_VERDICTS})"
        )
    with op.batch_alter_table("segment_references") as batch:
        batch.add_column(sa.Column("score_counts", sa.LargeBinary(), nullable=True))
    op.create_table(
        "score_bins",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("edges", sa.LargeBinary(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rows_used", sa.BigInteger(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_score_bins_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", name=op.f("pk_score_bins")),
    )


def downgrade() -> None:
    op.drop_table("score_bins")
    with op.batch_alter_table("segment_references") as batch:
        batch.drop_column("score_counts")
    # score_shift is only ever provisional: the window is not judged yet.
    op.execute(
        "UPDATE window_metrics SET verdict = 'insufficient_data' WHERE verdict = 'score_shift'"
    )
    with op.batch_alter_table("window_metrics") as batch:
        batch.drop_constraint(op.f("ck_window_metrics_verdict"), type_="check")
        batch.create_check_constraint(
            op.f("ck_window_metrics_verdict"), f"verdict IN ({_OLD_VERDICTS})"
        )
        batch.drop_column("nowcast_reference_version")
        batch.drop_column("nowcast")
        batch.drop_column("flagged")
        batch.drop_column("score_counts")
