"""predictions partitioned by model then by week, prediction_keys for id uniqueness (PostgreSQL)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 13:00:00

PostgreSQL: predictions becomes LIST-partitioned by model_id, each model's table RANGE-
partitioned by window_start in weeks (app/db/partitions.py creates the tables as batches need
them). A primary key of a partitioned table must contain the partition keys, so it becomes
(model_id, window_start, prediction_id), which also serves the worker's read of one window (the
index on (model_id, window_start) goes: one index less to write per row, and a random id lands
in its window's part of the key rather than anywhere in it); the id's uniqueness within its
model moves to the narrow table prediction_keys (model_id, prediction_id) -> window_start, partitioned by model
too: the ingest writes both, and a late label reads its row's window there first. Existing rows
are copied over (the old table is dropped after), which on a large store takes as long as
writing the rows again. SQLite keeps one plain table: nothing to do there.
"""

from collections.abc import Sequence

import numpy as np
from alembic import op

from app.db.partitions import ensure_partitions, week_starts

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = "model_id, prediction_id, window_start, ts, score, label, segment"
_TABLE = (
    "model_id integer NOT NULL, "
    'prediction_id varchar(200) COLLATE "C" NOT NULL, '
    "window_start timestamptz NOT NULL, "
    "ts timestamptz NOT NULL, "
    "score double precision NOT NULL, "
    "label smallint, "
    "segment varchar(100) DEFAULT 'all' NOT NULL, "
    "CONSTRAINT ck_predictions_label CHECK (label IS NULL OR label IN (0, 1))"
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE predictions RENAME TO predictions_unpartitioned")
    op.execute("ALTER TABLE predictions_unpartitioned RENAME CONSTRAINT pk_predictions TO pk_old")
    op.execute("ALTER INDEX ix_predictions_model_id_window_start RENAME TO ix_old")
    op.execute(
        f"CREATE TABLE predictions ({_TABLE}, CONSTRAINT pk_predictions "
        "PRIMARY KEY (model_id, window_start, prediction_id)) PARTITION BY LIST (model_id)"
    )
    op.execute(
        "CREATE TABLE prediction_keys (model_id integer NOT NULL, "
        'prediction_id varchar(200) COLLATE "C" NOT NULL, window_start timestamptz NOT NULL, '
        "CONSTRAINT pk_prediction_keys PRIMARY KEY (model_id, prediction_id)) "
        "PARTITION BY LIST (model_id)"
    )
    # Retention deletes the keys of expired windows through this index.
    op.execute(
        "CREATE INDEX ix_prediction_keys_model_id_window_start "
        "ON prediction_keys (model_id, window_start)"
    )
    weeks = bind.exec_driver_sql(
        "SELECT model_id, array_agg(DISTINCT (extract(epoch FROM window_start) * 1e6)::int8) "
        "FROM predictions_unpartitioned GROUP BY model_id"
    ).all()
    for model_id, starts in weeks:
        ensure_partitions(bind, model_id, week_starts(np.array(starts, dtype=np.int64)))
    op.execute(f"INSERT INTO predictions ({_COLUMNS}) SELECT {_COLUMNS} FROM predictions_unpartitioned")
    op.execute(
        "INSERT INTO prediction_keys (model_id, prediction_id, window_start) "
        "SELECT model_id, prediction_id, window_start FROM predictions_unpartitioned"
    )
    op.execute("DROP TABLE predictions_unpartitioned")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"CREATE TABLE predictions_unpartitioned ({_TABLE}, CONSTRAINT pk_old "
        "PRIMARY KEY (model_id, prediction_id))"
    )
    op.execute(
        f"INSERT INTO predictions_unpartitioned ({_COLUMNS}) SELECT {_COLUMNS} FROM predictions"
    )
    op.execute("DROP TABLE prediction_keys")  # and every model's table under it
    op.execute("DROP TABLE predictions")
    op.execute("ALTER TABLE predictions_unpartitioned RENAME TO predictions")
    op.execute("ALTER TABLE predictions RENAME CONSTRAINT pk_old TO pk_predictions")
    op.execute(
        "CREATE INDEX ix_predictions_model_id_window_start ON predictions (model_id, window_start)"
    )
