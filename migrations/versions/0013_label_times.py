"""predictions.labelled_at and label_source, windows.newest_event, models.label_horizon_days

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 09:00:00

Fraud labels arrive late and from sources that differ in what their absence means (issue 23):
each row now records when its label arrived and where from (a smallint code,
app.monitoring.vocabulary.LABEL_SOURCE_CODES). Labels stored before this migration keep NULL
time and source: when they arrived is unknown and is not invented. windows.newest_event is the
newest event instant ingest brought into a window (a row's timestamp, a label's time); the
model's clock is the newest over its windows. Stored windows start from their rows' newest
timestamp, so a model that receives nothing after the upgrade has a clock too. models.label_horizon_days (NULL: off) is a
setting of the model.

The CHECKs are added with the columns, in one statement per column on SQLite (its ADD COLUMN
takes column constraints; a table constraint would mean rebuilding predictions). On
PostgreSQL they are NOT VALID: every stored row holds NULL in the new columns, so they hold
already, and validating would scan every partition under the ACCESS EXCLUSIVE lock this
migration takes on predictions. New rows are checked all the same, and week tables created
from now on copy them as valid ones (app/db/partitions.py).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The codes of app.monitoring.vocabulary.LABEL_SOURCE_CODES as of this revision (a migration
# keeps what it wrote, whatever the vocabulary becomes).
_SOURCE_CHECK = "label_source IN (1, 2, 3)"
_SET_CHECK = "label IS NOT NULL OR (labelled_at IS NULL AND label_source IS NULL)"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE predictions ADD COLUMN labelled_at timestamptz, "
            "ADD COLUMN label_source smallint, "
            f"ADD CONSTRAINT ck_predictions_label_source CHECK ({_SOURCE_CHECK}) NOT VALID, "
            f"ADD CONSTRAINT ck_predictions_label_set CHECK ({_SET_CHECK}) NOT VALID"
        )
    else:
        op.execute("ALTER TABLE predictions ADD COLUMN labelled_at DATETIME")
        # Both checks on the column added last: dropping it drops them (the downgrade).
        op.execute(
            "ALTER TABLE predictions ADD COLUMN label_source SMALLINT "
            f"CONSTRAINT ck_predictions_label_source CHECK ({_SOURCE_CHECK}) "
            f"CONSTRAINT ck_predictions_label_set CHECK ({_SET_CHECK})"
        )
    op.add_column("windows", sa.Column("newest_event", sa.DateTime(timezone=True), nullable=True))
    # What ingest brought before this revision that is still known: the rows' timestamps (one
    # pass over predictions, through each window's part of its key). A window whose rows
    # retention deleted keeps NULL; the model's clock is the newest over its windows anyway.
    op.execute(
        "UPDATE windows SET newest_event = (SELECT max(p.ts) FROM predictions p "
        "WHERE p.model_id = windows.model_id AND p.window_start = windows.window_start)"
    )
    op.add_column("models", sa.Column("label_horizon_days", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("models", "label_horizon_days")
    op.drop_column("windows", "newest_event")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE predictions DROP CONSTRAINT ck_predictions_label_set, "
            "DROP CONSTRAINT ck_predictions_label_source, "
            "DROP COLUMN label_source, DROP COLUMN labelled_at"
        )
    else:
        op.execute("ALTER TABLE predictions DROP COLUMN label_source")
        op.execute("ALTER TABLE predictions DROP COLUMN labelled_at")
