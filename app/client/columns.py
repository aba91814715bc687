"""Turning arrays, DataFrames and file rows into the API's columnar JSON, one batch at a time.

The client sends the columnar format (``{"batch_id", "columns": {...}}``): it is the server's
fastest path. A column is a list of JSON-ready values or, where it can be, a numpy array
(scores, timestamps) that app.client.json_arrays writes whole: timestamps as text straight from
numpy, numbers through msgspec. Timestamps travel as ISO 8601 strings with ``Z`` (exact
to the microsecond, unlike float Unix seconds).
"""

from __future__ import annotations

import gzip
import hashlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from app.client import json_arrays
from app.ingest.parse import FIELDS

# A column as the client holds it: JSON-ready values, or a 1-D numpy array of float64 scores or
# datetime64[us] UTC timestamps.
Column = list[Any] | np.ndarray[Any, Any]
# The API's column names, in its order (the server's own list).
COLUMNS = FIELDS
# The columns of a label update (POST .../labels).
LABEL_COLUMNS = ("id", "label", "labelled_at", "source")
# A batch id is at most 200 characters (README, "Idempotency"); the prefix leaves room for
# the row range and the digest.
MAX_PREFIX = 120


@dataclass(frozen=True)
class Chunk:
    """Rows ``first .. first + rows - 1`` of a feed, as JSON-ready columns."""

    first: int
    columns: dict[str, Column]

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
    parts = [b'"' + name.encode() + b'":' + column_json(v) for name, v in chunk.columns.items()]
    columns = b"{" + b",".join(parts) + b"}"
    digest = hashlib.sha256(columns).hexdigest()[:16]
    batch_id = f"{prefix[:MAX_PREFIX]}:{chunk.first}+{chunk.rows}:{digest}"
    body = b"".join((b'{"batch_id":', json_arrays.dumps(batch_id), b',"columns":', columns, b"}"))
    if compress:
        # Level 1: most of the size gain at a fraction of the CPU of the default level 9.
        body = gzip.compress(body, compresslevel=1, mtime=0)
    return EncodedBatch(batch_id, chunk.first, chunk.rows, body, compress)


def column_json(values: Column) -> bytes:
    """One column as a JSON array: a datetime64 array as ISO strings with ``Z`` (its values
    are UTC), a numeric array as numbers (NaN and infinities as null, which the server
    refuses naming the row), a list as it is."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "M":
            return json_arrays.datetimes_json(values)
        return json_arrays.numbers_json(values)
    # A list may still hold a numpy scalar (a caller's own chunk): written as its Python value.
    return json_arrays.dumps(values)


def timestamp_column(values: Any) -> Column:
    """Timestamps as the API takes them.

    One rule for every date-time the client is given as a value rather than text: one
    without a time zone is UTC, whether numpy ``datetime64``, a naive pandas
    column or a naive ``datetime``; an aware one is converted to UTC. numpy and pandas
    datetimes become a datetime64[us] array, sent as ISO strings with ``Z``; strings pass as
    they are (text must carry its offset: the server refuses it otherwise, showing the value
    with ``Z``); numbers are Unix seconds.
    """
    datetimes = _utc_datetimes(values)  # a tz-aware pandas column: its UTC instants
    array = np.asarray(values) if datetimes is None else datetimes
    if array.dtype.kind == "M":  # a list of numpy datetime64 values too
        if np.isnat(array).any():
            raise ValueError("timestamp column has missing values (NaT)")
        return array.astype("datetime64[us]")
    if array.dtype.kind in "iuf":
        result: list[Any] = array.tolist()
        return result
    return [_timestamp_value(value) for value in array.tolist()]


def _timestamp_value(value: Any) -> Any:
    """An aware ``datetime`` as ISO text with its offset, a naive one as UTC (the client's one
    rule for a date-time without a zone: :func:`timestamp_column`), anything else as it is."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            return value.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")
        return value.isoformat()
    return value


def label_column(values: Any) -> list[Any]:
    """Labels 0/1, with None, NaN or a pandas NA meaning "not known yet".

    Any other value is sent as it is, for the server to refuse by row (``int(0.5)`` would
    have quietly sent 0).
    """
    try:
        numbers = np.asarray(values, dtype=np.float64)  # None becomes NaN
    except (TypeError, ValueError):  # a pandas NA, a string: value by value
        return [_label_value(value) for value in _as_list(values)]
    known = ~np.isnan(numbers)
    if not np.isin(numbers[known], (0.0, 1.0)).all():
        return [_label_value(value) for value in _as_list(values)]
    labels: list[Any] = np.where(known, numbers, 0).astype(np.int8).tolist()
    for index in np.flatnonzero(~known).tolist():
        labels[index] = None
    return labels


def _label_value(value: Any) -> Any:
    if _missing(value):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        # 0 and 1 as integers; another number as its text, which JSON can always carry
        # (an infinity would become null, "not known yet") and the server refuses by row.
        return int(value) if value in (0, 1) else str(value)
    return value


def label_time_column(values: Any) -> Column:
    """When each label arrived, as the API takes it: ISO 8601 with an offset.

    Datetimes of numpy, pandas or Python (naive ones read as UTC, as in
    :func:`timestamp_column`) are sent as text; strings pass as they are; a missing time
    (None, NaT, NaN) is null, for which the server takes the moment it receives the label.
    Numbers are sent as they are, for the server to refuse: a label time is never Unix seconds.
    """
    array = _utc_datetimes(values)
    if array is not None:
        if not np.isnat(array).any():
            return array.astype("datetime64[us]")
        texts = np.datetime_as_string(array.astype("datetime64[us]"), unit="us").tolist()
        return [None if text == "NaT" else text + "Z" for text in texts]
    return [
        value if type(value) is str else None if _missing(value) else _timestamp_value(value)
        for value in _as_list(values)
    ]


def source_column(values: Any) -> list[str | None]:
    """Where each label comes from (feedback, chargeback, confirmed); missing: none sent (the
    server takes ``confirmed``). Any other word is sent for the server to refuse by row."""
    return _texts(values)


def amount_column(values: Any) -> Column:
    """Each transaction's value: a float64 array when every row has a finite one (written
    whole), else a list with null where one is missing (None, NaN, a pandas
    NA). Anything else (an infinity, a boolean, a string) is sent as it is, for the server to
    refuse by row, rather than turned into a number here."""
    dtype = getattr(values, "dtype", None)
    listed = _as_list(values) if dtype is None else None
    if (dtype is not None and dtype.kind == "b") or (listed and bool in set(map(type, listed))):
        return [_amount_value(value) for value in _as_list(values)]
    try:
        numbers = np.asarray(values if listed is None else listed, dtype=np.float64)
    except (TypeError, ValueError):  # a pandas NA, a string: value by value
        return [_amount_value(value) for value in _as_list(values)]
    finite = np.isfinite(numbers)
    if finite.all():
        return numbers
    amounts: list[Any] = numbers.tolist()
    for index in np.flatnonzero(~finite).tolist():
        amounts[index] = None if np.isnan(numbers[index]) else str(amounts[index])
    return amounts


def _amount_value(value: Any) -> Any:
    if _missing(value):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    ):
        number = float(value)
        return number if math.isfinite(number) else str(number)
    return value.item() if isinstance(value, np.generic) else value


def entity_column(values: Any) -> list[str | None]:
    """The card or account of each row as text (integers, card numbers, are sent as their
    decimal text); missing: none sent."""
    return _texts(values)


def _utc_datetimes(values: Any) -> np.ndarray[Any, Any] | None:
    """``values`` as naive UTC datetime64 if they are datetimes of numpy or pandas, else None."""
    if getattr(getattr(values, "dtype", None), "tz", None) is not None:
        utc = values.dt.tz_convert("UTC") if hasattr(values, "dt") else values.tz_convert("UTC")
        values = utc.tz_localize(None) if not hasattr(utc, "dt") else utc.dt.tz_localize(None)
    if not hasattr(values, "dtype"):
        return None
    array = np.asarray(values)
    return array if np.issubdtype(array.dtype, np.datetime64) else None


def segment_column(values: Any) -> list[str | None]:
    """Segments as strings; a missing one means the whole-model segment ``all``."""
    return _texts(values)


def _texts(values: Any) -> list[str | None]:
    """Strings as they are, a missing value as None, anything else as its text."""
    # A str is taken as it is without a call per value (most of this function's time).
    return [
        value if type(value) is str else None if _missing(value) else str(value)
        for value in _as_list(values)
    ]


def id_column(values: Any) -> list[str]:
    """Prediction ids as strings (integers are accepted and sent as their decimal text)."""
    return [value if type(value) is str else str(value) for value in _as_list(values)]


def score_column(values: Any) -> Column:
    """Scores as a float64 array (a non-finite one goes as null, refused by the server by row)."""
    return np.asarray(values, dtype=np.float64)


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


_CONVERTERS: dict[str, Callable[[Any], Column]] = {
    "id": id_column,
    "timestamp": timestamp_column,
    "score": score_column,
    "label": label_column,
    "segment": segment_column,
    "labelled_at": label_time_column,
    "source": source_column,
    "amount": amount_column,
    "entity": entity_column,
}


def arrays_to_columns(arrays: Mapping[str, Any]) -> dict[str, Column]:
    """The columns of a feed from array-likes of equal length by API column name (None: the
    column is not sent)."""
    columns = {
        name: _CONVERTERS[name](values) for name, values in arrays.items() if values is not None
    }
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns have different lengths: {lengths}")
    return columns


def label_entries(chunk: Chunk) -> list[dict[str, Any]]:
    """A chunk of label columns (LABEL_COLUMNS) as the entries of a label update; a missing
    time or source is left out (the server's defaults apply), a missing label is sent as null
    for the server to refuse by entry."""
    listed = {name: _json_values(values) for name, values in chunk.columns.items()}
    return [
        {
            name: value
            for name, value in zip(listed, entry, strict=True)
            if value is not None or name in ("id", "label")
        }
        for entry in zip(*listed.values(), strict=True)
    ]


def _json_values(values: Column) -> list[Any]:
    if isinstance(values, np.ndarray):
        decoded: list[Any] = json_arrays.loads(column_json(values))
        return decoded
    return values


def frame_arrays(frame: Any) -> dict[str, Any]:
    """The columns of a pandas DataFrame whose columns are named as the API's, by name.

    ``id``, ``timestamp`` and ``score`` are required; ``label``, ``segment``, ``labelled_at``,
    ``source``, ``amount`` and ``entity`` optional. Other columns are refused here, as the
    server would refuse them.
    """
    unknown = sorted(set(map(str, frame.columns)) - set(COLUMNS))
    if unknown:
        raise ValueError(f"unknown columns {unknown}; expected a subset of {list(COLUMNS)}")
    missing = [name for name in ("id", "timestamp", "score") if name not in frame.columns]
    if missing:
        raise ValueError(f"missing columns {missing}")
    return {name: frame[name] for name in COLUMNS if name in frame.columns}


def array_chunks(arrays: dict[str, Any], batch_rows: int) -> Iterator[Chunk]:
    """Chunks of ``batch_rows`` rows from array-likes by API column name, each converted only
    when it is taken: on the client's helper thread, while the previous batch is in flight,
    instead of the whole feed before the first request."""
    sized = {name: _sized(values) for name, values in arrays.items() if values is not None}
    lengths = {name: len(values) for name, values in sized.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"columns have different lengths: {lengths}")
    for start in range(0, lengths["id"], batch_rows):
        part = {name: _rows(values, start, start + batch_rows) for name, values in sized.items()}
        yield Chunk(start, arrays_to_columns(part))


def _sized(values: Any) -> Any:
    """``values`` if it can be measured and sliced (an array, a list, a Series), else a list."""
    return values if hasattr(values, "__len__") and hasattr(values, "__getitem__") else list(values)


def _rows(values: Any, start: int, stop: int) -> Any:
    # .iloc: a pandas Series sliced by position whatever its index.
    return values.iloc[start:stop] if hasattr(values, "iloc") else values[start:stop]


def split(columns: dict[str, Column], batch_rows: int, first: int = 0) -> Iterator[Chunk]:
    """Consecutive chunks of at most ``batch_rows`` rows."""
    total = len(columns["id"])
    for start in range(0, total, batch_rows):
        stop = min(start + batch_rows, total)
        yield Chunk(first + start, {name: values[start:stop] for name, values in columns.items()})
