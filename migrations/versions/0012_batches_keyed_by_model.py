"""batches: primary key (model_id, batch_id) instead of a surrogate id

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 17:30:00

Every key of a per-model table now begins with model_id, the column a distributed PostgreSQL
such as Citus would shard by (docs/scaling.md): a sharded table's primary and unique keys must
contain its distribution column, and batches' surrogate id did not. (model_id, batch_id) was
already unique and is what every read and write of a batch record names; the id was only
handed from the claim of a batch to the write of its response, inside one transaction.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # SQLite cannot alter a primary key: batch mode copies the table (it is one row a batch).
    with op.batch_alter_table("batches", recreate="auto") as batch:
        batch.drop_constraint("uq_batches_model_id_batch_id", type_="unique")
        batch.drop_constraint("pk_batches", type_="primary")
        batch.create_primary_key("pk_batches", ["model_id", "batch_id"])
        batch.drop_column("id")


def downgrade() -> None:
    # The old surrogate ids are gone; new ones are numbered in the order rows are read.
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE batches DROP CONSTRAINT pk_batches")
        op.execute("ALTER TABLE batches ADD COLUMN id bigserial")
        op.execute("ALTER TABLE batches ADD CONSTRAINT pk_batches PRIMARY KEY (id)")
        op.create_unique_constraint(
            "uq_batches_model_id_batch_id", "batches", ["model_id", "batch_id"]
        )
        return
    with op.batch_alter_table("batches", recreate="always") as batch:
        batch.add_column(sa.Column("id", sa.Integer(), nullable=True))
    op.execute("UPDATE batches SET id = rowid")
    with op.batch_alter_table("batches", recreate="always") as batch:
        batch.alter_column("id", existing_type=sa.Integer(), nullable=False)
        batch.drop_constraint("pk_batches", type_="primary")
        batch.create_primary_key("pk_batches", ["id"])
        batch.create_unique_constraint("uq_batches_model_id_batch_id", ["model_id", "batch_id"])
