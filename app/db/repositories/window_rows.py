"""SQL of the worker's read: one window's rows into numpy, per segment.

PostgreSQL: one ``GROUP BY segment`` query whose labelled scores, labels, label times and
sources (and the unlabelled rows' scores, which the nowcast counts) come back as binary
``float8[]``/``int2[]``/``timestamptz[]`` values, parsed by numpy as strided views. This is
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
    NaN where a row has none (ingest accepts only finite amounts, so NaN means nothing else).
    ``entities`` and ``unlabelled_entities`` are their entities as integer codes, equal for
    equal entities within one read, NO_ENTITY where a row names none.
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
    sends as NULL rather than as an array as long as its rows) is ``rows`` times ``none``."""
    if value is None:
        return np.full(rows, none, dtype=dtype)
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
# scan, so each is aligned with its score array row by row. An entity travels as its 64-bit
# hash (hashtextextended): the metrics need only which rows share an entity, and two of a
# window's entities share a hash with probability about entities^2 / 2^65 (3e-8 at a million).
# Label times come back as binary timestamptz (int8 microseconds since 2000-01-01: exact,
# where a float of epoch seconds is not), an unknown one as -infinity, whose binary value is
# the int8 minimum: UNKNOWN_LABEL_TIME as it is.
_PG_QUERY = """
SELECT segment,
       count(*),
       array_agg(score) FILTER (WHERE label IS NOT NULL),
       array_agg(label) FILTER (WHERE label IS NOT NULL),
       array_agg(score) FILTER (WHERE label IS NULL),
       array_agg(COALESCE(labelled_at, '-infinity')) FILTER (WHERE label IS NOT NULL),
       array_agg(COALESCE(label_source, 0::smallint)) FILTER (WHERE label IS NOT NULL),
       CASE WHEN count(amount) > 0 THEN
         array_agg(COALESCE(amount, 'NaN'::float8)) FILTER (WHERE label IS NOT NULL) END,
       CASE WHEN count(amount) > 0 THEN
         array_agg(COALESCE(amount, 'NaN'::float8)) FILTER (WHERE label IS NULL) END,
       CASE WHEN count(entity) > 0 THEN
         array_agg(COALESCE(hashtextextended(entity, 0), %(none)s))
           FILTER (WHERE label IS NOT NULL) END,
       CASE WHEN count(entity) > 0 THEN
         array_agg(COALESCE(hashtextextended(entity, 0), %(none)s)) FILTER (WHERE label IS NULL) END
FROM predictions
WHERE model_id = %(model)s AND window_start = %(start)s
GROUP BY segment
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
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _codes(entities: Iterable[str | None], codes: dict[str, int]) -> npt.NDArray[np.int64]:
    numbered = [NO_ENTITY if e is None else codes.setdefault(e, len(codes)) for e in entities]
    return np.array(numbered, dtype=np.int64)


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
    with binary_array_cursor(raw) as cursor:
        cursor.execute(_PG_QUERY, {"model": model_id, "start": window_start, "none": NO_ENTITY})
        fetched = cursor.fetchall()
    out = []
    while fetched:
        # Popped, so that each segment's arrays are freed once it is built (they are the
        # SegmentRows' own where the type already fits: no second copy of a column).
        row = fetched.pop()
        segment, total, scores, labels, unlabelled, times, sources = row[:7]
        amounts, unlabelled_amounts, entities, unlabelled_entities = row[7:]
        del row
        labelled_rows = 0 if labels is None else labels.size
        unlabelled_rows = 0 if unlabelled is None else unlabelled.size
        times = as_array(times, np.int64)
        known = times != UNKNOWN_LABEL_TIME
        times[known] += POSTGRES_EPOCH_MICROS  # in place: PostgreSQL's epoch to Unix's
        out.append(
            SegmentRows(
                str(segment),
                int(total),
                as_array(scores, np.float64),
                as_array(labels, np.int8),
                as_array(unlabelled, np.float64),
                times,
                as_array(sources, np.int8),
                amounts=as_array(amounts, np.float64, labelled_rows, np.nan),
                unlabelled_amounts=as_array(
                    unlabelled_amounts, np.float64, unlabelled_rows, np.nan
                ),
                entities=as_array(entities, np.int64, labelled_rows, NO_ENTITY),
                unlabelled_entities=as_array(
                    unlabelled_entities, np.int64, unlabelled_rows, NO_ENTITY
                ),
            )
        )
    return out
