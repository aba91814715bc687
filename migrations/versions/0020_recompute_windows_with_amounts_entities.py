"""Recompute the windows whose rows carry amounts or entities: their sketches now keep them

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26 17:00:00

The value metrics (value_recall, value_precision, net_savings) and card precision
(entity_precision_at_k; issue 24) are read from a window's stored sketch, which keeps its rows'
amounts and its entity sketch from this version on (sketch format version 2,
app/metrics/sketch.py). A window stored before has a version-1 sketch, and those metrics would
stay undefined although its rows carry amounts or entities: this marks exactly those windows
dirty (one more dirty version), so the worker rebuilds their sketches from their rows. Windows
without any are left alone (their version-1 sketch is what they would get again). No schema
change. The downgrade turns every version-2 sketch (windows' and references') back into
version 1 by dropping its amounts and entity sketch, which the older code does not read.
"""

import struct
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
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
              AND (p.amount IS NOT NULL OR p.entity IS NOT NULL)
        )
        """
    )


# The sketch header of app/metrics/sketch.py: magic, version, count width, n, negatives below,
# threshold, entries. Frozen here: a migration must not change when the app's code does.
_HEADER = struct.Struct("<4sBBqqdq")
_TABLES = ("window_metrics", "segment_references")


def _without_amounts(data: bytes) -> bytes | None:
    """A version-2 sketch as version 1 (None: not a version-2 sketch): its counts, without the
    flags byte and what follows it."""
    if len(data) < _HEADER.size or data[4] != 2:
        return None
    _magic, _version, width, _n, _below, _threshold, size = _HEADER.unpack_from(data)
    end = _HEADER.size + size * (8 + 3 * width)
    return data[:4] + bytes([1]) + data[5:end]


def downgrade() -> None:
    bind = op.get_bind()
    for table in _TABLES:
        stored = bind.execute(sa.text(f"SELECT DISTINCT sketch FROM {table} WHERE sketch IS NOT NULL"))
        for (data,) in stored.all():
            older = _without_amounts(bytes(data))
            if older is not None:
                bind.execute(
                    sa.text(f"UPDATE {table} SET sketch = :older WHERE sketch = :data"),
                    {"older": older, "data": bytes(data)},
                )
