"""model_segments: the segment names each model has, for the segment cap

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 09:50:00

Ingest refuses a batch that would give a model more than CALMON_MAX_SEGMENTS_PER_MODEL segments
(every segment is a set of series in /metrics). The names are kept here so the check never scans
the model's predictions; they are filled in from the predictions already stored.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "model_segments",
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("segment", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["models.id"],
            name=op.f("fk_model_segments_model_id_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_id", "segment", name=op.f("pk_model_segments")),
    )
    op.execute(
        "INSERT INTO model_segments (model_id, segment) "
        "SELECT DISTINCT model_id, segment FROM predictions"
    )


def downgrade() -> None:
    op.drop_table("model_segments")
