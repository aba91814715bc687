"""SQL of ingestion: the bulk write of predictions, labels, dirty windows (batch records:
app/db/repositories/batches.py).

A batch of new ids is written in one step: on PostgreSQL one binary COPY straight into
predictions (app/db/repositories/staged_rows.py encodes it), on SQLite one INSERT from a staging
table. A batch with stored ids is staged into a temporary table and upserted with set-based
statements that are the same on both backends; only the filling differs (binary COPY, or one
``executemany``). Everything runs in the caller's transaction, so a failure anywhere leaves
nothing behind.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np
import psycopg
from sqlalchemy import Connection, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.copy_binary import copy_in
from app.db.driver import DriverConnection, driver_connection
from app.db.partitions import (
    KEYS,
    analyze_new_weeks,
    ensure_partitions,
    model_table,
    week_starts,
)
from app.db.repositories.partitioned_upsert import (
    CHANGED,
    NEW,
    SAME,
    STAGE,
    differs,
    upsert_partitioned,
)
from app.db.repositories.staged_rows import (
    PREDICTION_COLUMNS,
    StagedRows,
    predictions_copy_data,
    sqlite_datetimes,
)
from app.ingest.timestamps import datetime_to_micros

_STAGE: Final = STAGE
_LABEL_STAGE: Final = "ingest_label_stage"
_STAGE_COLUMNS: Final = (
    "prediction_id",
    "ts_staged",
    "window_staged",
    "score",
    "label",
    "segment",
)
_STAGE_TYPES: Final = ("text", "int8", "int8", "float8", "int2", "text")
_KEY_COLUMNS: Final = ("model_id", "prediction_id", "window_start")


@dataclass(frozen=True)
class WriteResult:
    """What the upsert did: new, changed and identical rows; the windows to recompute (of new
    and changed rows, and the ones changed rows moved out of)."""

    inserted: int
    updated: int
    unchanged: int
    windows_touched: list[int]


@dataclass(frozen=True)
class LabelResult:
    """Outcome of a label-only update."""

    changed_windows: list[int]
    updated: int
    unchanged: int
    unknown_ids: list[str]


class IngestRepository:
    """Reads and writes of the ingest path inside the caller's transaction."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.connection: Connection = session.connection()
        self.is_postgres = self.connection.dialect.name == "postgresql"
        self.driver: DriverConnection = driver_connection(session)

    def _psycopg(self) -> psycopg.Connection[Any]:
        assert isinstance(self.driver, psycopg.Connection)
        return self.driver

    def _sqlite3(self) -> sqlite3.Connection:
        assert isinstance(self.driver, sqlite3.Connection)
        return self.driver

    # -- predictions -----------------------------------------------------------------------

    def write_rows(self, rows: StagedRows) -> WriteResult:
        """Upsert the rows: new ids are inserted, known ids that differ get the new values.

        A null label never erases a stored one (a re-sent prediction feed must not undo a
        chargeback), and a row re-sent identical is left alone: it is neither an update nor a
        reason to recompute its window.

        The common case (none of the ids is stored yet) is tried first as a plain INSERT: on
        PostgreSQL it costs markedly less than ``ON CONFLICT`` (no speculative insertion), and
        asking first which ids are stored costs as much again (one index probe per row). It
        runs in a savepoint, so a stored id (or another transaction storing one meanwhile)
        sends the batch to the upsert instead of failing it.

        The caller holds the model's row FOR KEY SHARE (predictions has no foreign key to
        models: its check cost one trigger call per row, 138-299 ms per 50,000 rows).
        """
        if self.is_postgres:  # outside the savepoint: the upsert below needs them too
            ensure_partitions(self.connection, rows.model_id, week_starts(rows.windows))
        try:
            with self.connection.begin_nested():
                if self.is_postgres:
                    self._copy_into_predictions(rows)
                else:
                    self._stage(rows)
                    self.connection.execute(text(self._insert_sql()), {"model_id": rows.model_id})
                    self._drop(_STAGE)
        except (IntegrityError, psycopg.errors.IntegrityError):
            pass  # a stored id, or a row the database refuses: the upsert tells which
        else:
            windows = sorted(set(np.unique(rows.windows).tolist()))
            return WriteResult(len(rows.ids), 0, 0, windows)
        self._stage(rows)
        if self.is_postgres:
            states = upsert_partitioned(self.connection, {"model_id": rows.model_id})
            return self._result(rows, states)
        return self._upsert(rows, {"model_id": rows.model_id})

    def _copy_into_predictions(self, rows: StagedRows) -> None:
        """PostgreSQL: one binary COPY into prediction_keys, one into predictions, rows in id
        order.

        No staging table and no INSERT ... SELECT: the rows go into the tables and their
        indexes as they arrive, built by numpy (app.db.copy_binary). The keys go first: a
        stored id fails there, on the narrower table. Byte order of the ids is the lock order
        every batch uses (see _id_order).
        """
        predictions, keys = predictions_copy_data(rows)
        # Straight into the model's table of keys: routing each row through the partitioned
        # parent cost 0.12 s of 0.46 s per 50,000 keys (bench.partitions).
        copy_in(self._psycopg(), model_table(KEYS, rows.model_id), _KEY_COLUMNS, keys)
        copy_in(self._psycopg(), "predictions", PREDICTION_COLUMNS, predictions)

    def _upsert(self, rows: StagedRows, params: dict[str, int]) -> WriteResult:
        """The write when some ids are stored: classify each staged row (new, changed,
        identical), then insert the new and update the changed ones in one statement."""
        states = self._classify(params)
        upsert = (
            " ON CONFLICT (model_id, prediction_id) DO UPDATE SET "
            "window_start = excluded.window_start, ts = excluded.ts, score = excluded.score, "
            "label = COALESCE(excluded.label, predictions.label), segment = excluded.segment "
            f"WHERE {differs('excluded', 'predictions')}"
        )
        self.connection.execute(text(self._insert_sql() + upsert), params)
        self._drop(_STAGE)
        return self._result(rows, states)

    def _result(
        self, rows: StagedRows, states: list[tuple[int, object, object, int]]
    ) -> WriteResult:
        inserted = sum(count for state, _, _, count in states if state == NEW)
        updated = sum(count for state, _, _, count in states if state == CHANGED)
        touched: set[int] = set()
        for state, new_window, old_window, _ in states:
            if state == NEW:
                touched.add(self._micros(new_window))
            elif state == CHANGED:  # both the window a row moves into and the one it leaves
                touched.update((self._micros(new_window), self._micros(old_window)))
        unchanged = len(rows.ids) - inserted - updated
        return WriteResult(inserted, updated, unchanged, sorted(touched))

    def _classify(self, params: dict[str, int]) -> list[tuple[int, object, object, int]]:
        """(state, new window, stored window, rows) of the staged rows, grouped.

        The state is NEW (id not stored), CHANGED or SAME, judged exactly as the upsert's
        WHERE judges it. Another transaction changing these ids between this read and the
        upsert can make the counts stale, never the stored rows.
        """
        new_window = self._stage_instant("window_staged")
        ts = self._stage_instant("ts_staged")
        result = self.connection.execute(
            text(
                f"SELECT CASE WHEN p.prediction_id IS NULL THEN {NEW} "
                f"WHEN {differs('n', 'p')} THEN {CHANGED} ELSE {SAME} END, "
                f"n.window_start, p.window_start, COUNT(*) "
                f"FROM (SELECT prediction_id, {new_window} AS window_start, {ts} AS ts, score, "
                f"label, segment FROM {_STAGE}) n "
                # One primary-key probe per staged row (the stage is small, the model is not).
                f"LEFT JOIN predictions p ON p.model_id = :model_id "
                f"AND p.prediction_id = n.prediction_id "
                f"GROUP BY 1, 2, 3"
            ),
            params,
        )
        return [(int(state), new, old, int(count)) for state, new, old, count in result]

    def _insert_sql(self) -> str:
        new_window, ts = self._stage_instant("window_staged"), self._stage_instant("ts_staged")
        return (
            f"INSERT INTO predictions "
            f"(model_id, prediction_id, window_start, ts, score, label, segment) "
            f"SELECT :model_id, prediction_id, {new_window}, {ts}, score, label, segment "
            f"FROM {_STAGE} WHERE true"  # WHERE: SQLite's parser needs it before ON CONFLICT
            f"{self._id_order('prediction_id')}"
        )

    def _id_order(self, column: str) -> str:
        """ORDER BY that makes every batch lock its rows in one order (PostgreSQL).

        Rows are inserted, updated and locked in the order the SELECT yields them; two batches
        holding the same ids in different orders would each wait for a row the other holds,
        until PostgreSQL aborts one for a deadlock. Byte order ("C") is the cheapest total order.
        SQLite has one writer at a time and needs none.
        """
        return f' ORDER BY {column} COLLATE "C"' if self.is_postgres else ""

    def _stage(self, rows: StagedRows) -> None:
        labels: list[int | None] = [None if v < 0 else v for v in rows.labels.tolist()]
        if self.is_postgres:
            self._create_stage(
                _STAGE,
                # "C" like predictions.prediction_id: the join and the ORDER BY use its index.
                'prediction_id varchar(200) COLLATE "C", ts_staged bigint, window_staged bigint, '
                "score double precision, label smallint, segment varchar(100)",
            )
            staged = zip(
                rows.ids,
                rows.timestamps.tolist(),
                rows.windows.tolist(),
                rows.scores.tolist(),
                labels,
                rows.segments,
                strict=True,
            )
            copy_in(self._psycopg(), _STAGE, _STAGE_COLUMNS, staged, types=_STAGE_TYPES)
            return
        self._create_stage(
            _STAGE,
            "prediction_id text, ts_staged text, window_staged text, score real, label integer, "
            "segment text",
        )
        values = zip(
            rows.ids,
            sqlite_datetimes(rows.timestamps),
            sqlite_datetimes(rows.windows),
            rows.scores.tolist(),
            labels,
            rows.segments,
            strict=True,
        )
        self._sqlite3().executemany(f"INSERT INTO {_STAGE} VALUES (?, ?, ?, ?, ?, ?)", values)

    def _stage_instant(self, column: str) -> str:
        """SQL turning a staged instant into the stored one.

        PostgreSQL stages epoch microseconds (binary COPY of an int8 is cheaper than building
        50,000 datetime objects) and converts exactly with interval arithmetic. SQLite stages
        the text SQLAlchemy stores for a UtcDateTime.
        """
        if self.is_postgres:
            return f"(TIMESTAMPTZ 'epoch' + {column} * INTERVAL '1 microsecond')"
        return column

    def _create_stage(self, name: str, columns: str) -> None:
        suffix = " ON COMMIT DROP" if self.is_postgres else ""
        self.connection.exec_driver_sql(f"CREATE TEMPORARY TABLE {name} ({columns}){suffix}")

    def _drop(self, name: str) -> None:
        # PostgreSQL drops it at commit; SQLite keeps temp tables per connection, and pooled
        # connections are reused.
        if not self.is_postgres:
            self.connection.exec_driver_sql(f"DROP TABLE {name}")

    def _micros(self, value: object) -> int:
        if isinstance(value, str):  # SQLite hands back the stored text
            value = datetime.fromisoformat(value).replace(tzinfo=UTC)
        assert isinstance(value, datetime)
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return datetime_to_micros(value)

    # -- labels ----------------------------------------------------------------------------

    def update_labels(self, model_id: int, ids: list[str], labels: list[int]) -> LabelResult:
        """Set the label of known ids; report the ids the model has never seen."""
        if self.is_postgres:
            self._create_stage(
                _LABEL_STAGE, 'prediction_id varchar(200) COLLATE "C", label smallint'
            )
            copy_in(
                self._psycopg(),
                _LABEL_STAGE,
                ("prediction_id", "label"),
                zip(ids, labels, strict=True),
                types=("text", "int2"),
            )
        else:
            self._create_stage(_LABEL_STAGE, "prediction_id text, label integer")
            self._sqlite3().executemany(
                f"INSERT INTO {_LABEL_STAGE} VALUES (?, ?)", zip(ids, labels, strict=True)
            )
        params = {"model_id": model_id}
        # PostgreSQL: an id's row is found through its key (which names its week table), so a
        # label probes two indexes, not one per week.
        keys = "prediction_keys" if self.is_postgres else "predictions"
        unknown = self.connection.execute(
            text(
                f"SELECT s.prediction_id FROM {_LABEL_STAGE} s WHERE (SELECT 1 FROM {keys} p "
                f"WHERE p.model_id = :model_id AND p.prediction_id = s.prediction_id) IS NULL"
            ),
            params,
        ).scalars()
        unknown_ids = sorted(unknown)
        if self.is_postgres:
            # Lock the keys in id order first (see _id_order): whoever changes a row holds its
            # key, so the row locks below cannot deadlock.
            stored = self.connection.execute(
                text(
                    f"SELECT k.window_start FROM prediction_keys k JOIN {_LABEL_STAGE} s "
                    f"ON k.prediction_id = s.prediction_id WHERE k.model_id = :model_id"
                    f"{self._id_order('k.prediction_id')} FOR NO KEY UPDATE OF k"
                ),
                params,
            ).scalars()
            analyze_new_weeks(self.connection, model_id, stored)
            update = (
                f"UPDATE predictions SET label = s.label FROM {_LABEL_STAGE} s "
                "JOIN prediction_keys k ON k.model_id = :model_id "
                "AND k.prediction_id = s.prediction_id "
                "WHERE predictions.model_id = :model_id "
                "AND predictions.prediction_id = s.prediction_id "
                "AND predictions.window_start = k.window_start "
            )
        else:
            update = (
                f"UPDATE predictions SET label = s.label FROM {_LABEL_STAGE} s "
                f"WHERE predictions.model_id = :model_id "
                f"AND predictions.prediction_id = s.prediction_id "
            )
        changed = self.connection.execute(
            text(
                update + "AND (predictions.label IS NULL OR predictions.label <> s.label) "
                "RETURNING predictions.window_start"
            ),
            params,
        ).scalars()
        windows = [self._micros(window) for window in changed]
        self._drop(_LABEL_STAGE)
        known = len(ids) - len(unknown_ids)
        return LabelResult(
            changed_windows=sorted(set(windows)),
            updated=len(windows),
            unchanged=known - len(windows),
            unknown_ids=unknown_ids,
        )
