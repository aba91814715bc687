"""model_purges: deleted models whose predictions are still being removed

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24 10:30:00

Deleting a model removes its row and every small table's rows at once; its predictions (no
foreign key since 0008) are removed afterwards by the worker in bounded chunks, so a large model
is deleted without one long transaction. This table lists the models still being purged.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "model_purges",
        sa.Column("model_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column(
            "requested_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("model_id", name=op.f("pk_model_purges")),
    )


def downgrade() -> None:
    op.drop_table("model_purges")
