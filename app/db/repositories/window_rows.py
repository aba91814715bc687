"""SQL of the worker's read: one window's rows into numpy, per segment.

PostgreSQL: one ``GROUP BY segment`` query whose labelled scores, labels, label times and
sources (and the unlabelled rows' scores, which the nowcast counts) come back as binary
``float8[]``/``int2[]``/``timestamptz[]`` values, one column of a segment to a row, parsed by
numpy as strided views. This is
the column-wise binary transfer the design asks of COPY without its cost in Python: psycopg
hands COPY OUT to Python one message per row (measured 1.45 s for 10^6 rows here), where one
binary array per column is one message (0.41 s for the same rows, the server's own work
included).
SQLite: a plain select.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.adapt import Loader
from sqlalchemy import select

from app.db.copy_binary import POSTGRES_EPOCH_MICROS
from app.db.driver import psycopg_connection
from app.db.repositories.base import Repository
from app.db.tables import Prediction
from app.ingest.timestamps import datetime_to_micros
from app.metrics.sketch_build import NO_ENTITY
from app.metrics.types import Float64Array
from app.monitoring.vocabulary import UNKNOWN_LABEL_SOURCE, UNKNOWN_LABEL_TIME

LabelArray = npt.NDArray[np.int8]
__all__ = ["UNKNOWN_LABEL_SOURCE", "UNKNOWN_LABEL_TIME", "SegmentRows", "WindowRowsRepository"]


@dataclass(frozen=True)
class SegmentRows:
    """A segment's labelled rows, and the scores of its rows without a label yet.

    ``scores``, ``labels``, ``labelled_at`` and ``sources`` are aligned element by element
    (one labelled row each): ``labelled_at`` in UTC epoch microseconds, UNKNOWN_LABEL_TIME for a
    label stored before label times were (its arrival is unknown); ``sources`` the stored code
    (LABEL_SOURCE_CODES), UNKNOWN_LABEL_SOURCE likewise. ``amounts`` and
    ``unlabelled_amounts`` are the rows' amounts, aligned with ``scores`` and ``unlabelled``,
    or NaN for all of them when any one has none (ingest accepts only finite amounts, so NaN
    means nothing else): the metrics use a part's amounts only when every row has one.
    ``entities`` and ``unlabelled_entities`` are their entities as integer codes, equal for
    equal entities within one read, or NO_ENTITY for all when any row names none.
    """

    segment: str
    rows_total: int
    scores: Float64Array
    labels: LabelArray
    unlabelled: Float64Array
    labelled_at: npt.NDArray[np.int64]
    sources: npt.NDArray[np.int8]
    amounts: Float64Array
    unlabelled_amounts: Float64Array
    entities: npt.NDArray[np.int64]
    unlabelled_entities: npt.NDArray[np.int64]


class _ArrayLoader(Loader):
    """A binary array value as a native numpy array, parsed while psycopg still holds the
    result: the array is the only copy. (Kept as bytes first, a copy of every column sat beside
    the result and then beside its parsed array: 60 of the 222 bytes a row a 10^7-row window's
    claim -> stored peaked at, bench/worker_memory.py.)"""

    format = psycopg.pq.Format.BINARY
    element = ">f8"
    """The big-endian numpy type of one element (PostgreSQL's binary format)."""

    def load(self, data: Any) -> npt.NDArray[Any]:
        native = np.dtype(self.element).newbyteorder("=")
        return parse_binary_array(data, self.element).astype(native)


class _Int2ArrayLoader(_ArrayLoader):
    element = ">i2"


class _Int8ArrayLoader(_ArrayLoader):
    element = ">i8"  # int8, and timestamptz: microseconds since 2000-01-01


_ARRAY_LOADERS: dict[str, type[_ArrayLoader]] = {
    "float8": _ArrayLoader,
    "int2": _Int2ArrayLoader,
    "int8": _Int8ArrayLoader,
    "timestamptz": _Int8ArrayLoader,
}


def as_array(
    value: npt.NDArray[Any] | None, dtype: type[np.generic], rows: int = 0, none: float = 0
) -> npt.NDArray[Any]:
    """A column :func:`binary_array_cursor` read, as ``dtype``, no copy when it already is one.
    NULL (an aggregate over no rows, or a column no row of the segment has, which the query
    sends as NULL rather than as an array as long as its rows) is ``rows`` times ``none``: a
    read-only view of one value, which holds no memory per row (the amounts of a 10^7-row window
    that has none were 80 MB of NaN)."""
    if value is None:
        if not rows:
            return np.empty(0, dtype=dtype)
        return np.broadcast_to(np.array(none, dtype=dtype), (rows,))
    return value.astype(dtype, copy=False)


def parse_binary_array(data: bytes | memoryview | None, dtype: str) -> npt.NDArray[Any]:
    """Decode PostgreSQL's binary array format (1-D, no NULLs) into a numpy array.

    Layout: ndim, has-nulls flag, element oid, then (length, lower bound) per dimension, then a
    4-byte length before each element. Fixed-width elements make that a strided record array.
    """
    if data is None:
        return np.empty(0, dtype=np.dtype(dtype).newbyteorder("="))
    ndim, has_nulls, _oid = np.frombuffer(data, dtype=">i4", count=3)
    if ndim == 0:
        return np.empty(0, dtype=np.dtype(dtype).newbyteorder("="))
    if ndim != 1 or has_nulls:
        raise ValueError("expected a one-dimensional array without NULLs")
    size = int(np.frombuffer(data, dtype=">i4", count=1, offset=12)[0])
    record = np.dtype([("length", ">i4"), ("value", dtype)])
    return np.frombuffer(data, dtype=record, count=size, offset=20)["value"]


# The two score arrays and the amount and entity arrays of a segment are aggregated in one
# scan, so each is aligned with its score array row by row. The amounts and entities are
# aggregated over the rows that have one: the metrics use a part's amounts (entities) only when
# every row has one, and an array as long as its scores is then aligned with them; a shorter
# one is dropped (_complete). A window without either (most models) so builds no array of
# placeholders (136 -> 100 ms of server time at 3 x 10^5 rows). An entity travels as its 64-bit
# hash (hashtextextended): the metrics need only which rows share an entity, and two of a
# window's entities share a hash with probability about entities^2 / 2^65 (3e-8 at a million).
# Label times come back as binary timestamptz (int8 microseconds since 2000-01-01: exact,
# where a float of epoch seconds is not), an unknown one as -infinity, whose binary value is
# the int8 minimum: UNKNOWN_LABEL_TIME as it is.
_AGGREGATE = """
SELECT segment,
       count(*) AS total,
       array_agg(score) FILTER (WHERE label IS NOT NULL) AS scores,
       array_agg(label) FILTER (WHERE label IS NOT NULL) AS labels,
       array_agg(score) FILTER (WHERE label IS NULL) AS unlabelled,
       array_agg(COALESCE(labelled_at, '-infinity')) FILTER (WHERE label IS NOT NULL) AS times,
       array_agg(COALESCE(label_source, 0::smallint)) FILTER (WHERE label IS NOT NULL) AS sources,
       array_agg(amount) FILTER (WHERE label IS NOT NULL AND amount IS NOT NULL) AS amounts,
       array_agg(amount) FILTER (WHERE label IS NULL AND amount IS NOT NULL)
         AS unlabelled_amounts,
       array_agg(hashtextextended(entity, 0))
         FILTER (WHERE label IS NOT NULL AND entity IS NOT NULL) AS entities,
       array_agg(hashtextextended(entity, 0))
         FILTER (WHERE label IS NULL AND entity IS NOT NULL) AS unlabelled_entities
FROM predictions
WHERE model_id = %(model)s AND window_start = %(start)s
GROUP BY segment
"""
_COLUMNS = (
    "scores",
    "labels",
    "unlabelled",
    "times",
    "sources",
    "amounts",
    "unlabelled_amounts",
    "entities",
    "unlabelled_entities",
)
# A segment's columns come back one to a row (k: its place in _COLUMNS), each in the column of
# its type, the others NULL. libpq receives a row whole, into a buffer that grows by doubling and
# is not given back while the connection lives: the whole segment in one row made that 512 MiB
# at 10^7 rows (54 bytes a row) beside the result itself, and the result held every column until
# the last was parsed. A column to a row, read in single-row mode, holds one column at a time (a
# timestamptz array, 12 bytes a row, is the largest). The set-returning function sits in the
# select list so that the aggregate runs once, under it, whatever the planner's estimates.
_PG_QUERY = f"""
SELECT segment, total, k,
       CASE k WHEN 0 THEN scores WHEN 2 THEN unlabelled
              WHEN 5 THEN amounts WHEN 6 THEN unlabelled_amounts END,
       CASE k WHEN 1 THEN labels WHEN 4 THEN sources END,
       CASE k WHEN 3 THEN times END,
       CASE k WHEN 7 THEN entities WHEN 8 THEN unlabelled_entities END
FROM (SELECT *, generate_series(0, {len(_COLUMNS) - 1}) AS k
      FROM ({_AGGREGATE}) AS segments) AS parts
"""


class WindowRowsRepository(Repository):
    """Reads a window's prediction rows inside the caller's transaction."""

    def read(self, model_id: int, window_start: datetime) -> list[SegmentRows]:
        """Every segment of one window, sorted by segment name."""
        raw = psycopg_connection(self.session)
        if raw is not None:
            segments = _read_postgresql(raw, model_id, window_start)
        else:
            segments = self._read_sqlite(model_id, window_start)
        return sorted(segments, key=lambda s: s.segment)

    def _read_sqlite(self, model_id: int, window_start: datetime) -> list[SegmentRows]:
        rows = self.session.execute(
            select(
                Prediction.segment,
                Prediction.score,
                Prediction.label,
                Prediction.labelled_at,
                Prediction.label_source,
                Prediction.amount,
                Prediction.entity,
            ).where(Prediction.model_id == model_id, Prediction.window_start == window_start)
        ).all()
        codes: dict[str, int] = {}  # one read's entities, numbered (the same in every segment)
        by_segment: dict[str, list[Any]] = {}
        for row in rows:
            by_segment.setdefault(row.segment, []).append(row)
        out = []
        for segment, items in by_segment.items():
            labelled = [row for row in items if row.label is not None]
            n = len(labelled)
            scores = np.fromiter((row.score for row in labelled), dtype=np.float64, count=n)
            labels = np.fromiter((row.label for row in labelled), dtype=np.int8, count=n)
            unlabelled = np.array([row.score for row in items if row.label is None], np.float64)
            times = np.fromiter(
                (_micros_or_unknown(row.labelled_at) for row in labelled), np.int64, count=n
            )
            sources = np.fromiter(
                (row.label_source or UNKNOWN_LABEL_SOURCE for row in labelled), np.int8, count=n
            )
            amounts = _amounts(row.amount for row in labelled)
            unlabelled_amounts = _amounts(row.amount for row in items if row.label is None)
            entities = _codes((row.entity for row in labelled), codes)
            unlabelled_entities = _codes((r.entity for r in items if r.label is None), codes)
            out.append(
                SegmentRows(
                    segment,
                    len(items),
                    scores,
                    labels,
                    unlabelled,
                    times,
                    sources,
                    amounts=amounts,
                    unlabelled_amounts=unlabelled_amounts,
                    entities=entities,
                    unlabelled_entities=unlabelled_entities,
                )
            )
        return out


def _amounts(values: Iterable[float | None]) -> Float64Array:
    read = list(values)
    kept = [v for v in read if v is not None]
    return _complete(np.array(kept, dtype=np.float64), np.float64, len(read), np.nan)


def _codes(entities: Iterable[str | None], codes: dict[str, int]) -> npt.NDArray[np.int64]:
    read = list(entities)
    numbered = [codes.setdefault(e, len(codes)) for e in read if e is not None]
    return _complete(np.array(numbered, dtype=np.int64), np.int64, len(read), NO_ENTITY)


def _micros_or_unknown(instant: datetime | None) -> int:
    return UNKNOWN_LABEL_TIME if instant is None else datetime_to_micros(instant)


def binary_array_cursor(raw: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
    """A binary cursor that hands arrays of float8, int2, int8 and timestamptz over as native
    numpy arrays (timestamptz as int8 microseconds since 2000-01-01), not as lists of Python
    objects; NULL stays None (:func:`as_array`)."""
    cursor = raw.cursor(binary=True)
    for element, loader in _ARRAY_LOADERS.items():  # built-in types: fixed array oids
        cursor.adapters.register_loader(psycopg.postgres.types[element].array_oid, loader)
    return cursor


def _read_postgresql(
    raw: psycopg.Connection[Any], model_id: int, window_start: datetime
) -> list[SegmentRows]:
    params = {"model": model_id, "start": window_start}
    read: dict[str, tuple[int, dict[str, npt.NDArray[Any] | None]]] = {}
    with binary_array_cursor(raw) as cursor:
        # One row at a time (single-row mode): each column's result is freed once parsed.
        for segment, total, k, *typed in cursor.stream(_PG_QUERY, params, binary=True):
            columns = read.setdefault(str(segment), (int(total), {}))[1]
            columns[_COLUMNS[k]] = next((v for v in typed if v is not None), None)
    return [_segment_rows(segment, total, columns) for segment, (total, columns) in read.items()]


def _segment_rows(
    segment: str, total: int, columns: dict[str, npt.NDArray[Any] | None]
) -> SegmentRows:
    """A segment's columns as read (each the array itself where its type already fits: no
    second copy of a column)."""
    labels, unlabelled = columns["labels"], columns["unlabelled"]
    labelled_rows = 0 if labels is None else labels.size
    unlabelled_rows = 0 if unlabelled is None else unlabelled.size
    times = as_array(columns["times"], np.int64)
    known = times != UNKNOWN_LABEL_TIME
    times[known] += POSTGRES_EPOCH_MICROS  # in place: PostgreSQL's epoch to Unix's
    return SegmentRows(
        segment,
        total,
        as_array(columns["scores"], np.float64),
        as_array(labels, np.int8),
        as_array(unlabelled, np.float64),
        times,
        as_array(columns["sources"], np.int8),
        amounts=_complete(columns["amounts"], np.float64, labelled_rows, np.nan),
        unlabelled_amounts=_complete(
            columns["unlabelled_amounts"], np.float64, unlabelled_rows, np.nan
        ),
        entities=_complete(columns["entities"], np.int64, labelled_rows, NO_ENTITY),
        unlabelled_entities=_complete(
            columns["unlabelled_entities"], np.int64, unlabelled_rows, NO_ENTITY
        ),
    )


def _complete(
    value: npt.NDArray[Any] | None, dtype: type[np.generic], rows: int, none: float
) -> npt.NDArray[Any]:
    """A column read over the rows that have a value, as ``dtype``: itself if every one of
    the ``rows`` rows has one, else ``rows`` times ``none`` (see :class:`SegmentRows`)."""
    complete = value is not None and value.size == rows
    return as_array(value if complete else None, dtype, rows, none)
