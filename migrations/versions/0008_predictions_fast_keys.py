"""predictions: no foreign key to models, prediction_id in byte order ("C") on PostgreSQL

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 10:15:00

The foreign key predictions.model_id -> models cost one trigger call per inserted row (138-299 ms
of a 50,000-row batch); the ingest now locks the model row once per batch FOR KEY SHARE, which
keeps a model from being deleted under a batch just the same. The default collation of the
database (a linguistic one) made every comparison of the text key cost more than byte order;
calmon only matches and sorts ids, so "C" loses nothing. Changing the collation rebuilds the
primary key index (minutes on a large table).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FK = "fk_predictions_model_id_models"
# SQLite's reflected foreign key has no name: the batch rebuild finds it by this convention.
NAMING_CONVENTION = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}


def upgrade() -> None:
    with op.batch_alter_table("predictions", naming_convention=NAMING_CONVENTION) as batch:
        batch.drop_constraint(_FK, type_="foreignkey")
    if op.get_bind().dialect.name == "postgresql":
        op.execute('ALTER TABLE predictions ALTER COLUMN prediction_id TYPE varchar(200) COLLATE "C"')


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            'ALTER TABLE predictions ALTER COLUMN prediction_id TYPE varchar(200) COLLATE "default"'
        )
    # Rows of models deleted meanwhile would make the foreign key impossible to add.
    op.execute("DELETE FROM predictions WHERE model_id NOT IN (SELECT id FROM models)")
    with op.batch_alter_table("predictions", naming_convention=NAMING_CONVENTION) as batch:
        batch.create_foreign_key(_FK, "models", ["model_id"], ["id"], ondelete="CASCADE")
