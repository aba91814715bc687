"""windows.parked_version: a window whose computation fails for a reason that retrying cannot
change is parked at its dirty version, not retried for ever

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 10:40:00

A parked window is claimable again as soon as its dirty version moves past the parked one:
new rows or labels, or a change of the model's settings.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("windows", sa.Column("parked_version", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("windows") as batch:
        batch.drop_column("parked_version")
