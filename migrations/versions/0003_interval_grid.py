"""window metrics: calibrated intervals on a grid of priors, for cheap pi0 moves

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 06:30:00

A nullable column, so existing rows stay valid: a row without a grid is re-bootstrapped on the
next pi0 move (and gets one then).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("window_metrics", sa.Column("interval_grid", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite >= 3.35), as in 0002: no batch rebuild of the table.
    op.drop_column("window_metrics", "interval_grid")
