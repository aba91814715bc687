"""Recompute the windows whose rows carry both amounts and entities: the card bootstrap

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27 02:10:00

The value metrics' intervals resample cards (entities) rather than rows when every row of a
window carries an amount and an entity (app/metrics/_card_bootstrap.py, docs/alert-budget.md):
the window's sketch keeps per-entity sums for it (flag 4 of sketch version 2). A window stored
before keeps its row-bootstrap intervals, too narrow when frauds come in bursts by card, until
something recomputes it: this marks dirty (one more dirty version) the windows where some row
carries both, so the worker rebuilds them. A window where no row does would be computed again
exactly as it is, and is left alone. No schema change.

The downgrade turns every sketch carrying entity values (windows' and references') back into
what the code before wrote: flag 4 cleared and its part dropped, which that code does not read.
"""

import struct
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
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
              AND p.amount IS NOT NULL AND p.entity IS NOT NULL
        )
        """
    )


# The sketch layout of app/metrics/sketch.py, frozen here: a migration must not change when the
# app's code does. Header (magic, version, count width, n, negatives below, threshold, entries),
# scores and counts; in version 2 a flags byte, the amounts (flag 1), the entity sketch
# length-prefixed (flag 2), the entity values (flag 4).
_HEADER = struct.Struct("<4sBBqqdq")
_HAS_AMOUNTS, _HAS_ENTITIES, _HAS_ENTITY_VALUES = 1, 2, 4
_TABLES = ("window_metrics", "segment_references")


def without_entity_values(data: bytes) -> bytes | None:
    """A sketch without its entity values (None: it has none), as the code before wrote it."""
    if len(data) < _HEADER.size or data[4] != 2:
        return None
    _magic, _version, width, _n, _below, _threshold, size = _HEADER.unpack_from(data)
    flags_at = _HEADER.size + size * (8 + 3 * width)
    flags = data[flags_at]
    if not flags & _HAS_ENTITY_VALUES:
        return None
    end = flags_at + 1
    if flags & _HAS_AMOUNTS:
        end += 8 * (2 * size + 2)
    if flags & _HAS_ENTITIES:
        (length,) = struct.unpack_from("<q", data, end)
        end += 8 + length
    return data[:flags_at] + bytes([flags & ~_HAS_ENTITY_VALUES]) + data[flags_at + 1 : end]


def downgrade() -> None:
    bind = op.get_bind()
    for table in _TABLES:
        stored = bind.execute(sa.text(f"SELECT DISTINCT sketch FROM {table} WHERE sketch IS NOT NULL"))
        for (data,) in stored.all():
            older = without_entity_values(bytes(data))
            if older is not None:
                bind.execute(
                    sa.text(f"UPDATE {table} SET sketch = :older WHERE sketch = :data"),
                    {"older": older, "data": bytes(data)},
                )
