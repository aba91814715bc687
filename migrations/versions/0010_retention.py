"""models.retention_windows and models.raw_kept_from: per-model retention of raw predictions

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 10:40:00

retention_windows (NULL: keep forever) says how many windows before the current one keep their
raw predictions; the worker deletes older ones in chunks and records in raw_kept_from where it
has deleted up to, so that those windows keep their stored metrics (never recomputed from rows
that are gone) and refuse new rows.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.add_column(sa.Column("retention_windows", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("raw_kept_from", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.drop_column("raw_kept_from")
        batch.drop_column("retention_windows")
