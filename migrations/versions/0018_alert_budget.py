"""models.alert_capacity and models.review_cost: the fraud team's daily alert budget and the
cost of reviewing one alert (issue 24)

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26 12:50:00

Both NULL (off) for every existing model: the metrics that need them (precision at k, net
savings) are then undefined with a reason. No CHECK constraint, as for the other monitoring
settings added after 0001: the API validates them, and on SQLite a new constraint means
rebuilding ``models``.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("models", sa.Column("alert_capacity", sa.Integer(), nullable=True))
    op.add_column("models", sa.Column("review_cost", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("models") as batch:
        batch.drop_column("review_cost")
        batch.drop_column("alert_capacity")
