"""worker heartbeats: stopped_at, so a worker that shut down cleanly is not counted alive

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 09:30:00

A worker stopped by SIGTERM used to leave its last heartbeat behind and count as alive for
three lease periods. It now writes ``stopped_at`` as its last act; the row stays (its counters
are summed into monotonic Prometheus counters, so deleting it would make them go down).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("worker_heartbeats") as batch:
        batch.add_column(sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("worker_heartbeats") as batch:
        batch.drop_column("stopped_at")
