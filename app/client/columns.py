"""Turning arrays, DataFrames and file rows into the API's columnar JSON, one batch at a time.

The client sends the columnar format (``{"batch_id", "columns": {...}}``): it is the server's
fastest path, and numpy turns a whole column into JSON-ready values in one call. Timestamps
travel as ISO 8601 strings with ``Z`` (exact to the microsecond, unlike float Unix seconds).
"""

from __future__ import annotations

import gzip
import hashlib
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

# The API's column names, in its order.
COLUMNS = ("id", "timestamp", "score", "label", "segment")
# A batch id is at most 200 characters (README, "Idempotency"); the prefix leaves room for
# the row range and the digest.
MAX_PREFIX = 120


@dataclass(frozen=True)
class Chunk:
    """Rows ``first .. first + rows - 1`` of a feed, as JSON-ready columns."""

    first: int
    columns: dict[str, list[Any]]

    @property
    def rows(self) -> int:
        """Number of rows in the chunk."""
        return len(self.columns["id"])


@dataclass(frozen=True)
class EncodedBatch:
    """One request's body, ready to send (and to re-send unchanged on a retry)."""

    batch_id: str
    first: int
    rows: int
    body: bytes
    gzipped: bool


def encode_chunk(chunk: Chunk, prefix: str, *, compress: bool = True) -> EncodedBatch:
    """The request body of ``chunk`` with a deterministic batch id.

    The id is ``<prefix>:<first>+<rows>:<digest>``, the digest a hash of the columns: the same
    rows at the same place always get the same id, so a retry or a re-run after a crash is a
    replay (200, nothing written), and different rows never collide with stored ones (no 409).
    """
    columns = orjson.dumps(chunk.columns, option=orjson.OPT_SERIALIZE_NUMPY)
    digest = hashlib.sha256(columns).hexdigest()[:16]
    batch_id = f"{prefix[:MAX_PREFIX]}:{chunk.first}+{chunk.rows}:{digest}"
    body = b'{"batch_id":' + orjson.dumps(batch_id) + b',"columns":' + columns + b"}"
    if compress:
        # Level 1: most of the size gain at a fraction of the CPU of the default level 9.
        body = gzip.compress(body, compresslevel=1, mtime=0)
    return EncodedBatch(batch_id, chunk.first, chunk.rows, body, compress)


def timestamp_column(values: Any) -> list[Any]:
    """Timestamps as the API takes them.

    numpy ``datetime64`` (naive, read as UTC) and pandas datetimes (aware ones converted to
    UTC) become ISO strings with ``Z``; strings pass as they are (they must carry an offset);
    numbers are Unix seconds.
    """
    if getattr(getattr(values, "dtype", None), "tz", None) is not None:
        # A tz-aware pandas column (any resolution): its UTC instants as naive datetime64.
        utc = values.dt.tz_convert("UTC") if hasattr(values, "dt") else values.tz_convert("UTC")
        values = utc.tz_localize(None) if not hasattr(utc, "dt") else utc.dt.tz_localize(None)
    array = np.asarray(values)
    if np.issubdtype(array.dtype, np.datetime64):
        if np.isnat(array).any():
            raise ValueError("timestamp column has missing values (NaT)")
        iso = np.datetime_as_string(array.astype("datetime64[us]"), unit="us")
        return [text + "Z" for text in iso.tolist()]
    if array.dtype.kind in "iuf":
        result: list[Any] = array.tolist()
        return result
    return [_timestamp_value(value) for value in array.tolist()]


def _timestamp_value(value: Any) -> Any:
    isoformat = getattr(value, "isoformat", None)
    if isoformat is not None and getattr(value, "tzinfo", None) is not None:
        return isoformat()
    return value


def label_column(values: Any) -> list[int | None]:
    """Labels 0/1, with None, NaN or a pandas NA meaning "not known yet"."""
    return [None if _missing(value) else int(value) for value in _as_list(values)]


def segment_column(values: Any) -> list[str | None]:
    """Segments as strings; a missing one means the whole-model segment ``all``."""
    return [None if _missing(value) else str(value) for value in _as_list(values)]


def id_column(values: Any) -> list[str]:
    """Prediction ids as strings (integers are accepted and sent as their decimal text)."""
    return [str(value) for value in _as_list(values)]


def score_column(values: Any) -> list[float]:
    """Scores as floats (a non-finite one is sent as such and refused by the server by row)."""
    result: list[float] = np.asarray(values, dtype=np.float64).tolist()
    return result


def _as_list(values: Any) -> list[Any]:
    if hasattr(values, "tolist"):
        listed: list[Any] = values.tolist()
        return listed
    return list(values)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    # pandas.NA and NaT compare as neither equal nor unequal to themselves.
    try:
        return bool(value != value)  # noqa: PLR0124
    except TypeError:
        return True


def arrays_to_columns(
    ids: Any, timestamps: Any, scores: Any, labels: Any = None, segments: Any = None
) -> dict[str, list[Any]]:
    """The columns of a whole feed from array-likes of equal length."""
    columns: dict[str, list[Any]] = {
        "id": id_column(ids),
        "timestamp": timestamp_column(timestamps),
        "score": score_column(scores),
    }
    if labels is not None:
        columns["label"] = label_column(labels)
    if segments is not None:
        columns["segment"] = segment_column(segments)
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns have different lengths: {lengths}")
    return columns


def frame_to_columns(frame: Any) -> dict[str, list[Any]]:
    """The columns of a pandas DataFrame whose columns are named as the API's.

    ``id``, ``timestamp`` and ``score`` are required; ``label`` and ``segment`` optional. Other
    columns are refused here, as the server would refuse them.
    """
    unknown = sorted(set(map(str, frame.columns)) - set(COLUMNS))
    if unknown:
        raise ValueError(f"unknown columns {unknown}; expected a subset of {list(COLUMNS)}")
    missing = [name for name in ("id", "timestamp", "score") if name not in frame.columns]
    if missing:
        raise ValueError(f"missing columns {missing}")
    return arrays_to_columns(
        frame["id"],
        frame["timestamp"],
        frame["score"],
        frame["label"] if "label" in frame.columns else None,
        frame["segment"] if "segment" in frame.columns else None,
    )


def split(columns: dict[str, list[Any]], batch_rows: int, first: int = 0) -> Iterator[Chunk]:
    """Consecutive chunks of at most ``batch_rows`` rows."""
    total = len(columns["id"])
    for start in range(0, total, batch_rows):
        stop = min(start + batch_rows, total)
        yield Chunk(first + start, {name: values[start:stop] for name, values in columns.items()})


def rows_to_chunks(
    rows: Iterable[Sequence[Any]], names: Sequence[str], batch_rows: int
) -> Iterator[Chunk]:
    """Chunks from an iterable of row tuples whose fields are ``names`` (file import)."""
    first = 0
    buffer: list[Sequence[Any]] = []
    for row in rows:
        buffer.append(row)
        if len(buffer) == batch_rows:
            yield Chunk(first, _transpose(buffer, names))
            first += len(buffer)
            buffer = []
    if buffer:
        yield Chunk(first, _transpose(buffer, names))


def _transpose(rows: list[Sequence[Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    return {name: list(values) for name, values in zip(names, zip(*rows, strict=True), strict=True)}
