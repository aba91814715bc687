"""Recompute the windows whose rows name entities: card precision's calibrated intervals

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27 20:10:00

Calibrated card precision (entity_precision_at_k) calibrates each bootstrap replicate by how
far its own entities' fraud odds moved, where it took its rows' (drawn apart from the entities):
its intervals were too wide, 98-100% coverage for a 95% interval (docs/alert-budget.md). A window
stored before keeps those intervals until something recomputes it: this marks dirty (one more
dirty version) the windows where some row names an entity, so the worker rebuilds them. Their
point values come back the same; their other intervals are drawn anew too (the entity sketch's
counts, drawn before the rows', and the card weights come from inverting one uniform now: the
same distributions, other draws). No schema change; the downgrade has nothing to undo (the code
before recomputes a window its own way whenever something dirties it).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0023"
down_revision: str | Sequence[str] | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        """
        UPDATE windows SET dirty_version = dirty_version + 1
        WHERE EXISTS (
            SELECT 1 FROM predictions p
            WHERE p.model_id = windows.model_id
              AND p.window_start = windows.window_start
              AND p.entity IS NOT NULL
        )
        """
    )


def downgrade() -> None:
    pass
