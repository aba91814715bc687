"""api_tokens.models: a token limited to some models (names, or prefixes ending in '*')

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 10:00:00

NULL, every token's value before this revision, means every model: existing tokens keep what
they could do.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_tokens", sa.Column("models", sa.Text(), nullable=True))


def downgrade() -> None:
    # Without the column a scoped token would see every model: revoked instead (kept, so that
    # `calmon token list` still shows what it was).
    op.execute(
        "UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP "
        "WHERE models IS NOT NULL AND revoked_at IS NULL"
    )
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("models")
