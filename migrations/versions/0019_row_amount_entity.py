"""predictions.amount and predictions.entity: a transaction's value and its card or account

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 13:30:00

Optional row fields of every ingest path (issue 24): the metrics of money caught and of
per-card precision need them. Both NULL for every stored row (not sent), and for every row
sent without them. No CHECK: ingestion refuses a negative or non-finite amount and a blank or
over-long entity by row (app.ingest.row_fields), and the VARCHAR holds the length.

On PostgreSQL the columns are added to the partitioned parent, which adds them to every
model's and week's table (a nullable column without a default is a catalog change: no
rewrite, no scan); week tables created later copy them (``CREATE TABLE ... (LIKE
predictions)``, app/db/partitions.py). On SQLite a plain ADD COLUMN.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("predictions", sa.Column("amount", sa.Double(), nullable=True))
    op.add_column("predictions", sa.Column("entity", sa.String(200), nullable=True))


def downgrade() -> None:
    # Plain DROP COLUMN on both (SQLite has it since 3.35): no table rebuild.
    op.execute("ALTER TABLE predictions DROP COLUMN entity")
    op.execute("ALTER TABLE predictions DROP COLUMN amount")
