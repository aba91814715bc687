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
from typing import Any, Final

import psycopg
from sqlalchemy import Connection, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.copy_binary import copy_in
from app.db.driver import DriverConnection, driver_connection
from app.db.partitions import (
    KEYS,
    ensure_partitions,
    model_table,
    week_starts,
)
from app.db.repositories.partitioned_upsert import (
    CHANGED,
    NEW,
    SAME,
    STAGE,
    State,
    differs,
    label_updates,
    newest_event,
    row_field_updates,
    upsert_partitioned,
)
from app.db.repositories.staged_rows import (
    PREDICTION_COLUMNS,
    STAGE_COLUMNS,
    StagedRows,
    newest_per_window,
    predictions_copy_data,
    sqlite_datetimes,
    sqlite_optional_codes,
    sqlite_optional_datetimes,
    sqlite_row_fields,
    stage_copy_data,
)
from app.db.repositories.staging import (
    create_stage,
    drop_stage,
    id_order,
    stage_instant,
    stored_micros,
)

_STAGE: Final = STAGE
_KEY_COLUMNS: Final = ("model_id", "prediction_id", "window_start")


@dataclass(frozen=True)
class WriteResult:
    """What the upsert did: new, changed and identical rows; the windows to recompute (of new
    and changed rows, and the ones changed rows moved out of), and the newest event (row
    timestamp or label time, epoch microseconds) the new and changed rows brought into each
    window they are in."""

    inserted: int
    updated: int
    unchanged: int
    windows_touched: list[int]
    newest_events: dict[int, int]


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
                    drop_stage(self.connection, _STAGE)
        except (IntegrityError, psycopg.errors.IntegrityError):
            pass  # a stored id, or a row the database refuses: the upsert tells which
        else:
            newest = newest_per_window(rows.windows, rows.events())
            return WriteResult(len(rows.ids), 0, 0, sorted(newest), newest)
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
        copy_in(self._psycopg(), "predictions", rows.copied_columns(), predictions)

    def _upsert(self, rows: StagedRows, params: dict[str, int]) -> WriteResult:
        """The write when some ids are stored: classify each staged row (new, changed,
        identical), then insert the new and update the changed ones in one statement."""
        states = self._classify(params)
        upsert = (
            " ON CONFLICT (model_id, prediction_id) DO UPDATE SET "
            "window_start = excluded.window_start, ts = excluded.ts, score = excluded.score, "
            f"segment = excluded.segment, {label_updates('excluded', 'predictions')}, "
            f"{row_field_updates('excluded', 'predictions')} "
            f"WHERE {differs('excluded', 'predictions')}"
        )
        self.connection.execute(text(self._insert_sql() + upsert), params)
        drop_stage(self.connection, _STAGE)
        return self._result(rows, states)

    def _result(self, rows: StagedRows, states: list[State]) -> WriteResult:
        inserted = sum(group[3] for group in states if group[0] == NEW)
        updated = sum(group[3] for group in states if group[0] == CHANGED)
        touched: set[int] = set()
        newest: dict[int, int] = {}
        for state, new_window, old_window, _, event in states:
            if state == SAME:
                continue
            window, instant = stored_micros(new_window), stored_micros(event)
            touched.add(window)
            newest[window] = max(newest.get(window, instant), instant)
            if state == CHANGED:  # the window a row leaves is recomputed too (no new event)
                touched.add(stored_micros(old_window))
        unchanged = len(rows.ids) - inserted - updated
        return WriteResult(inserted, updated, unchanged, sorted(touched), newest)

    def _classify(self, params: dict[str, int]) -> list[State]:
        """(state, new window, stored window, rows, newest event) of the staged rows, grouped.

        The state is NEW (id not stored), CHANGED or SAME, judged exactly as the upsert's
        WHERE judges it. Another transaction changing these ids between this read and the
        upsert can make the counts stale, never the stored rows.
        """
        new_window = stage_instant(self.connection, "window_staged")
        ts = stage_instant(self.connection, "ts_staged")
        labelled_at = stage_instant(self.connection, "labelled_staged")
        event = newest_event("n", "p", postgres=self.is_postgres)
        result = self.connection.execute(
            text(
                f"SELECT CASE WHEN p.prediction_id IS NULL THEN {NEW} "
                f"WHEN {differs('n', 'p')} THEN {CHANGED} ELSE {SAME} END, "
                f"n.window_start, p.window_start, COUNT(*), MAX({event}) "
                f"FROM (SELECT prediction_id, {new_window} AS window_start, {ts} AS ts, score, "
                f"label, segment, {labelled_at} AS labelled_at, amount, entity FROM {_STAGE}) n "
                # One primary-key probe per staged row (the stage is small, the model is not).
                f"LEFT JOIN predictions p ON p.model_id = :model_id "
                f"AND p.prediction_id = n.prediction_id "
                f"GROUP BY 1, 2, 3"
            ),
            params,
        )
        return [(int(state), new, old, int(count), ev) for state, new, old, count, ev in result]

    def _insert_sql(self) -> str:
        new_window = stage_instant(self.connection, "window_staged")
        ts = stage_instant(self.connection, "ts_staged")
        labelled_at = stage_instant(self.connection, "labelled_staged")
        return (
            f"INSERT INTO predictions ({', '.join(PREDICTION_COLUMNS)}) "
            f"SELECT :model_id, prediction_id, {new_window}, {ts}, score, label, segment, "
            f"{labelled_at}, label_source, amount, entity "
            f"FROM {_STAGE} WHERE true"  # WHERE: SQLite's parser needs it before ON CONFLICT
            f"{id_order(self.connection, 'prediction_id')}"
        )

    def _stage(self, rows: StagedRows) -> None:
        if self.is_postgres:
            create_stage(
                self.connection,
                _STAGE,
                # "C" like predictions.prediction_id: the join and the ORDER BY use its index.
                'prediction_id varchar(200) COLLATE "C", ts_staged bigint, window_staged bigint, '
                "score double precision, label smallint, segment varchar(100), "
                "labelled_staged bigint, label_source smallint, amount double precision, "
                "entity varchar(200)",
            )
            copy_in(self._psycopg(), _STAGE, STAGE_COLUMNS, stage_copy_data(rows))
            return
        create_stage(
            self.connection,
            _STAGE,
            "prediction_id text, ts_staged text, window_staged text, score real, label integer, "
            "segment text, labelled_staged text, label_source integer, amount real, entity text",
        )
        labels: list[int | None] = [None if v < 0 else v for v in rows.labels.tolist()]
        amounts, entities = sqlite_row_fields(rows)
        values = zip(
            rows.ids,
            sqlite_datetimes(rows.timestamps),
            sqlite_datetimes(rows.windows),
            rows.scores.tolist(),
            labels,
            rows.segments,
            sqlite_optional_datetimes(rows.labelled_at),
            sqlite_optional_codes(rows.sources),
            amounts,
            entities,
            strict=True,
        )
        marks = ", ".join("?" * len(STAGE_COLUMNS))
        self._sqlite3().executemany(f"INSERT INTO {_STAGE} VALUES ({marks})", values)
