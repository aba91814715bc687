"""The two floors of bench/ingest.py, the id patterns, and the rows stored before a run.

calmon floor: calmon's own repository code (binary COPY into the staging table, the INSERT,
window dirtying) straight from ready arrays, no HTTP, parsing or validation: what the API would
reach if the request cost nothing.

Best floor: the cheapest write that keeps the same guarantees (unique id per model through the
same primary key of prediction_keys, the same week tables of predictions, one transaction per
batch, rows in id order, the model row locked once per batch so that it cannot be deleted
underneath, the batch's windows marked dirty): one plain binary COPY into prediction_keys and
one into predictions, from rows converted and sorted before timing. What
calmon adds above it (staging, the batch record, the segment check) is the price of late-label
upserts, retries and the segment cap.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.db.copy_binary import copy_in
from app.db.driver import psycopg_connection
from app.db.partitions import ensure_partitions, week_starts
from app.db.repositories.ingest import ingest_repository
from app.db.repositories.staged_rows import StagedRows
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.types import utcnow
from app.ingest.label_times import with_defaults
from app.ingest.timestamps import datetime_to_micros, micros_to_datetime
from app.monitoring.vocabulary import UNKNOWN_LABEL_SOURCE, UNKNOWN_LABEL_TIME

ID_PATTERNS = ("sequential", "random")
_COPY_COLUMNS = (
    "model_id",
    "prediction_id",
    "window_start",
    "ts",
    "score",
    "label",
    "segment",
    "labelled_at",
    "label_source",
)
_COPY_TYPES = ["int4", "text", "timestamptz", "timestamptz", "float8", "int2", "text"]
_COPY_TYPES += ["timestamptz", "int2"]
_ROW_FIELDS = ("amount", "entity")
_ROW_FIELD_TYPES = ["float8", "text"]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def make_ids(pattern: str, tag: str, first: int, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` ids: ascending (``tag`` + zero-padded counter, each new id the largest so far, like
    a sequence or a time-ordered id) or random 32-hex (a UUID4's spread: every insert lands on
    a random page of the primary key's index)."""
    if pattern == "sequential":
        return [f"{tag}{number:012d}" for number in range(first, first + n)]
    return [bytes(row).hex() for row in rng.integers(0, 256, (n, 16), dtype=np.uint8)]


def labelled_rows(  # noqa: PLR0913 - StagedRows' fields
    model_id: int,
    ids: list[str],
    *,
    micros: npt.NDArray[np.int64],
    windows: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int8],
    segments: list[str],
) -> StagedRows:
    """Rows as the ingest service hands them to the repository: labelled rows sent without a
    time or source get the defaults (received now, confirmed), as the API's do."""
    none_sent = np.full(len(ids), UNKNOWN_LABEL_TIME, dtype=np.int64)
    times, sources = with_defaults(
        labels >= 0, none_sent, np.zeros(len(ids), np.int8), micros, datetime_to_micros(utcnow())
    )
    return StagedRows(model_id, ids, micros, windows, scores, labels, segments, times, sources)


def best_floor_rows(rows: StagedRows) -> list[tuple[Any, ...]]:
    """The COPY rows of the best floor, converted and sorted by id (byte order) before timing."""
    labels = [None if v < 0 else v for v in rows.labels.tolist()]
    stamps = [_EPOCH + timedelta(microseconds=v) for v in rows.timestamps.tolist()]
    windows = [_EPOCH + timedelta(microseconds=v) for v in rows.windows.tolist()]
    # The same label times and sources calmon stores (defaults filled in for labelled rows).
    labelled_at = [
        None if v == UNKNOWN_LABEL_TIME else _EPOCH + timedelta(microseconds=v)
        for v in rows.labelled_at.tolist()
    ]
    sources = [None if v == UNKNOWN_LABEL_SOURCE else v for v in rows.sources.tolist()]
    columns: list[list[Any]] = [
        [rows.model_id] * len(rows.ids),
        rows.ids,
        windows,
        stamps,
        rows.scores.tolist(),
        labels,
        rows.segments,
        labelled_at,
        sources,
    ]
    if rows.amounts is not None and rows.entities is not None:  # the wider rows' floor
        columns.append([None if math.isnan(v) else v for v in rows.amounts.tolist()])
        columns.append([e or None for e in rows.entities])
    copy_rows = list(zip(*columns, strict=True))
    # Python orders str by code point, which for UTF-8 is byte order (the key's "C" collation).
    copy_rows.sort(key=lambda row: row[1])
    return copy_rows


def write_best_floor(
    factory: sessionmaker[Session],
    model_id: int,
    copy_rows: list[tuple[Any, ...]],
    *,
    one_table: str | None = None,
) -> float:
    """One transaction: lock the model row, COPY the rows into predictions, mark the windows
    dirty; seconds taken. With ``one_table``, the rows go into that one unpartitioned table
    instead, whose own primary key keeps ids unique (no keys to write)."""
    windows = sorted({_micros(row[2]) for row in copy_rows})
    start = time.perf_counter()
    with factory.begin() as session:
        _lock_model(session, model_id)
        raw = psycopg_connection(session)
        assert raw is not None
        if one_table is None:
            # The same partitioned layout: the weeks' tables, the keys that keep ids unique.
            ensure_partitions(session.connection(), model_id, week_starts(np.array(windows)))
            keys = [row[:3] for row in copy_rows]
            copy_in(raw, "prediction_keys", _COPY_COLUMNS[:3], keys, types=_COPY_TYPES[:3])
        target = one_table or "predictions"
        wide = len(copy_rows[0]) > len(_COPY_COLUMNS)  # with amount and entity
        names = (*_COPY_COLUMNS, *_ROW_FIELDS) if wide else _COPY_COLUMNS
        types = [*_COPY_TYPES, *_ROW_FIELD_TYPES] if wide else _COPY_TYPES
        copy_in(raw, target, names, copy_rows, types=types)
        WindowQueueRepository(session).mark_dirty(model_id, _datetimes(windows), utcnow())
    return time.perf_counter() - start


def write_calmon_floor(factory: sessionmaker[Session], rows: StagedRows) -> float:
    """calmon's repository writes, straight from ready arrays; seconds taken."""
    start = time.perf_counter()
    with factory.begin() as session:
        _lock_model(session, rows.model_id)
        repository = ingest_repository(session)
        result = repository.write_rows(rows)
        newest = {
            micros_to_datetime(window): micros_to_datetime(event)
            for window, event in result.newest_events.items()
        }
        WindowQueueRepository(session).mark_dirty(
            rows.model_id, _datetimes(result.windows_touched), utcnow(), newest
        )
    return time.perf_counter() - start


def preload(engine: Engine, model_id: int, pattern: str, rows: int, start: datetime) -> None:
    """Store ``rows`` predictions of ``model_id`` before the run (generated in the database,
    ids of the same pattern as the run's), then VACUUM ANALYZE as autovacuum would have."""
    if rows <= 0:
        return
    ids = "md5(i::text)" if pattern == "random" else "'0' || lpad(i::text, 12, '0')"
    stored_at = start - timedelta(days=30)
    with engine.begin() as connection:
        week = np.array([_micros(stored_at)], dtype=np.int64)
        ensure_partitions(connection, model_id, week_starts(week))
        connection.execute(
            text(
                f"INSERT INTO predictions ({', '.join(_COPY_COLUMNS[:7])}) "
                f"SELECT :model_id, {ids}, "
                ":start, :start + (i % 86400) * interval '1 second', (i % 1000) / 1000.0, "
                "CASE WHEN i % 3 = 0 THEN NULL ELSE (i % 200 = 0)::int END, 'FR' "
                "FROM generate_series(1, :rows) AS i"
            ),
            {"model_id": model_id, "rows": rows, "start": stored_at},
        )
        connection.execute(
            text(
                "INSERT INTO prediction_keys (model_id, prediction_id, window_start) "
                "SELECT model_id, prediction_id, window_start FROM predictions "
                "WHERE model_id = :model_id"
            ),
            {"model_id": model_id},
        )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE predictions"))
        connection.execute(text("VACUUM ANALYZE prediction_keys"))


def _lock_model(session: Session, model_id: int) -> None:
    """What the ingest does once per batch instead of a foreign-key check per row."""
    session.execute(text("SELECT 1 FROM models WHERE id = :id FOR KEY SHARE"), {"id": model_id})


def _micros(instant: datetime) -> int:
    return (instant - _EPOCH) // timedelta(microseconds=1)


def _datetimes(window_starts: list[int]) -> list[datetime]:
    """The windows' Unix microseconds as the queue takes them."""
    return [micros_to_datetime(start) for start in window_starts]
