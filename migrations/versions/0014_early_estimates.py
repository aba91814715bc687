"""window_metrics.arrivals and early; alert_states' continued detector (early evidence)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 12:00:00

Each window segment says whether its labels are complete (``mature``, decided by the worker:
app/monitoring/maturity.py; readers withhold an immature window's measured values), keeps its
labels by the look they arrived at (``arrivals``: a few bytes per
distinct bin, look and source; app/metrics/reporting.py) and its early estimates
(``early``: what its complete labels are expected to show, and its early evidence about a drop,
app/monitoring/early.py). Each alert state keeps the drop statistic continued through the windows
not judged yet (``early_statistic``, ``early_paging``, ``early_windows``) and the look it was
taken at (``early_as_of``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "window_metrics",
        sa.Column("mature", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    # What the worker decided before: a window is mature once judged, or covered enough (no
    # model has a label horizon yet: it came with 0013 and nothing used it).
    op.execute(
        "UPDATE window_metrics SET mature = (judged_at IS NOT NULL OR (label_coverage >= "
        "(SELECT min_label_coverage FROM models WHERE models.id = window_metrics.model_id) "
        "AND negatives > 0))"
    )
    op.add_column("window_metrics", sa.Column("arrivals", sa.LargeBinary(), nullable=True))
    op.add_column("window_metrics", sa.Column("early", sa.JSON(), nullable=True))
    op.add_column(
        "alert_states",
        sa.Column("early_statistic", sa.Double(), nullable=False, server_default="0"),
    )
    op.add_column(
        "alert_states",
        sa.Column("early_paging", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column(
        "alert_states", sa.Column("early_windows", sa.Integer(), nullable=False, server_default="0")
    )
    op.add_column(
        "alert_states", sa.Column("early_as_of", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column("alert_states", sa.Column("judged_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("alert_states", "judged_reason")
    op.drop_column("alert_states", "early_as_of")
    op.drop_column("alert_states", "early_windows")
    op.drop_column("alert_states", "early_paging")
    op.drop_column("alert_states", "early_statistic")
    op.drop_column("window_metrics", "early")
    op.drop_column("window_metrics", "arrivals")
    op.drop_column("window_metrics", "mature")
