"""SQLite's ingest write: a staging table filled by ``executemany``, one INSERT or upsert from it.

SQLite stages the text SQLAlchemy stores for an instant, so the staged columns are stored as
they are (no conversion), and it has one writer at a time, so no lock order is needed.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from sqlalchemy import text
from sqlalchemy.orm import Session

from app.db.driver import driver_connection
from app.db.repositories.ingest.interface import IngestRepository
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
)
from app.db.repositories.staged_rows import (
    PREDICTION_COLUMNS,
    STAGE_COLUMNS,
    StagedRows,
    sqlite_datetimes,
    sqlite_optional_codes,
    sqlite_optional_datetimes,
    sqlite_row_fields,
)
from app.db.repositories.staging import create_stage, drop_stage

_INSERT: Final = (
    f"INSERT INTO predictions ({', '.join(PREDICTION_COLUMNS)}) "
    "SELECT :model_id, prediction_id, window_staged, ts_staged, score, label, segment, "
    "labelled_staged, label_source, amount, entity "
    f"FROM {STAGE} WHERE true"  # WHERE: SQLite's parser needs it before ON CONFLICT
)
_UPSERT: Final = (
    " ON CONFLICT (model_id, prediction_id) DO UPDATE SET "
    "window_start = excluded.window_start, ts = excluded.ts, score = excluded.score, "
    f"segment = excluded.segment, {label_updates('excluded', 'predictions')}, "
    f"{row_field_updates('excluded', 'predictions')} "
    f"WHERE {differs('excluded', 'predictions')}"
)
_CLASSIFY: Final = (
    f"SELECT CASE WHEN p.prediction_id IS NULL THEN {NEW} "
    f"WHEN {differs('n', 'p')} THEN {CHANGED} ELSE {SAME} END, "
    f"n.window_start, p.window_start, COUNT(*), MAX({newest_event('n', 'p', postgres=False)}) "
    f"FROM (SELECT prediction_id, window_staged AS window_start, ts_staged AS ts, score, "
    f"label, segment, labelled_staged AS labelled_at, amount, entity FROM {STAGE}) n "
    # One primary-key probe per staged row (the stage is small, the model is not).
    "LEFT JOIN predictions p ON p.model_id = :model_id AND p.prediction_id = n.prediction_id "
    "GROUP BY 1, 2, 3"
)


class SqliteIngestRepository(IngestRepository):
    """The ingest write on SQLite (sqlite3)."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        driver = driver_connection(session)
        assert isinstance(driver, sqlite3.Connection), "SqliteIngestRepository off SQLite"
        self.driver = driver

    def insert_new(self, rows: StagedRows) -> None:
        """One INSERT from the staging table."""
        self.stage(rows)
        self.connection.execute(text(_INSERT), {"model_id": rows.model_id})
        drop_stage(self.connection, STAGE)

    def stage(self, rows: StagedRows) -> None:
        """The staging table, filled by one ``executemany``."""
        create_stage(
            self.connection,
            STAGE,
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
        self.driver.executemany(f"INSERT INTO {STAGE} VALUES ({marks})", values)

    def upsert(self, model_id: int) -> list[State]:
        """Classify each staged row (new, changed, identical), then insert the new and update
        the changed ones in one statement.

        The classification judges exactly as the upsert's WHERE does. Another transaction
        changing these ids between the two can make the counts stale, never the stored rows
        (and SQLite has one writer at a time).
        """
        params = {"model_id": model_id}
        states = self.connection.execute(text(_CLASSIFY), params)
        grouped: list[State] = [
            (int(state), new, old, int(count), event) for state, new, old, count, event in states
        ]
        self.connection.execute(text(_INSERT + _UPSERT), params)
        drop_stage(self.connection, STAGE)
        return grouped
