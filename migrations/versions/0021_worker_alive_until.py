"""worker_heartbeats.alive_until: until when a worker counts alive without another heartbeat

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-26 16:30:00

A worker counted alive for three lease periods after its last heartbeat (15 minutes at the
defaults, issue 25). Each heartbeat now says how long it vouches for the worker: two of the
worker's own heartbeat intervals, by the database's clock (app/worker/loop.py), so the API's
collector needs neither the worker's settings nor date arithmetic in SQL. NULL for rows written
before (their workers are judged by the API's heartbeat interval until they beat again).

0020 is taken by another change in progress: whichever lands second re-chains onto the other.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("worker_heartbeats", sa.Column("alive_until", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # Plain DROP COLUMN on both (SQLite has it since 3.35): no table rebuild.
    op.execute("ALTER TABLE worker_heartbeats DROP COLUMN alive_until")
