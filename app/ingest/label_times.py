"""A label's time and source as sent (``labelled_at``, ``source``): checked, then defaulted.

Shared by batch rows (app.ingest.validate) and label updates (app.ingest.labels). Both fields
are optional: a column nobody sent costs one C-level type scan. What was *sent* is kept apart
from the defaults (UNKNOWN_LABEL_TIME, UNKNOWN_LABEL_SOURCE where nothing was sent), because a
batch's content hash must not depend on when it arrived (:func:`with_defaults` fills them in at
write time).

``labelled_at`` is ISO 8601 text with an offset, never Unix seconds: a number here is more
likely a unit mistake (milliseconds) than a label time, and feeds export dates as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np
import numpy.typing as npt

from app.ingest.errors import Problems, RowError
from app.ingest.timestamps import out_of_bounds, parse_timestamps
from app.monitoring.vocabulary import (
    DEFAULT_LABEL_SOURCE,
    LABEL_SOURCE_CODES,
    LABEL_SOURCES,
    UNKNOWN_LABEL_SOURCE,
    UNKNOWN_LABEL_TIME,
)

LABELLED_AT: Final = "labelled_at"
SOURCE: Final = "source"
NOT_A_TIME: Final = "must be an ISO-8601 string with a UTC offset (Z or +HH:MM), or null"
SOURCE_RULE: Final = f"must be one of {', '.join(LABEL_SOURCES)}, or null"
TOO_LATE: Final = "after the latest accepted, now + CALMON_MAX_FUTURE"
BEFORE_TIMESTAMP: Final = "before the prediction's timestamp"
WITHOUT_LABEL: Final = "only meaningful with a label, and this row's label is null"
_DEFAULT_CODE: Final = LABEL_SOURCE_CODES[DEFAULT_LABEL_SOURCE]
# None sends no source; anything else not a key is refused by row.
_CODES: Final[dict[object, int]] = {None: UNKNOWN_LABEL_SOURCE}
_CODES.update(LABEL_SOURCE_CODES.items())
_NONE: Final = type(None)


def label_times(values: list[object], latest: int, problems: Problems) -> npt.NDArray[np.int64]:
    """``labelled_at`` values as UTC epoch microseconds (UNKNOWN_LABEL_TIME where none was
    sent); a value that is no ISO 8601 text with an offset, or later than ``latest``, is a
    problem of its row."""
    micros = np.full(len(values), UNKNOWN_LABEL_TIME, dtype=np.int64)
    types = set(map(type, values))
    if types <= {_NONE}:
        return micros
    strings: list[object] = values
    at = np.arange(len(values))
    if not types <= {str}:  # gaps (nulls) or wrong types: the rows that sent text
        strings = []
        for row, value in enumerate(values):
            if isinstance(value, str):
                strings.append(value)
            elif value is not None:
                problems.add(RowError(row, LABELLED_AT, NOT_A_TIME))
        at = np.flatnonzero([isinstance(value, str) for value in values])
    parsed = parse_timestamps(strings, unix_seconds=False)
    micros[at] = parsed.micros
    failed = np.zeros(len(values), dtype=bool)
    for index, message in parsed.errors:
        failed[at[index]] = True
        micros[at[index]] = UNKNOWN_LABEL_TIME
        problems.add(RowError(int(at[index]), LABELLED_AT, message))

    def too_late(row: int) -> str:
        return out_of_bounds(values[row], int(micros[row]), latest, TOO_LATE)

    problems.add_mask(LABELLED_AT, ~failed & (micros > latest), too_late)
    return micros


def label_sources(values: list[object], problems: Problems) -> npt.NDArray[np.int8]:
    """``source`` words as their stored codes (UNKNOWN_LABEL_SOURCE where none was sent); any
    other value is a problem of its row."""
    if set(map(type, values)) <= {_NONE}:
        return np.zeros(len(values), dtype=np.int8)
    try:
        codes = np.array([_CODES.get(value, -1) for value in values], dtype=np.int8)
    except TypeError:  # an unhashable value (a list, an object)
        codes = np.array(
            [_CODES.get(v, -1) if isinstance(v, str | None) else -1 for v in values], dtype=np.int8
        )
    if len(codes) and codes.min() < 0:
        problems.add_mask(SOURCE, codes < 0, SOURCE_RULE)
        codes[codes < 0] = UNKNOWN_LABEL_SOURCE
    return codes


def batch_label_fields(
    columns: Mapping[str, list[object]],
    labelled: npt.NDArray[np.bool_],
    timestamps: npt.NDArray[np.int64],
    latest: int,
    problems: Problems,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
    """A batch's label times and sources as sent (see :func:`label_times`,
    :func:`label_sources`), checked against the rows' other fields: both only with a label,
    and a time not before the row's own timestamp."""
    rows = len(timestamps)
    sent_times, sent_sources = columns.get(LABELLED_AT), columns.get(SOURCE)
    labelled_at = np.full(rows, UNKNOWN_LABEL_TIME, dtype=np.int64)
    sources = np.zeros(rows, dtype=np.int8)
    if sent_times is not None:
        labelled_at = label_times(sent_times, latest, problems)
        given = labelled_at != UNKNOWN_LABEL_TIME
        problems.add_mask(LABELLED_AT, given & ~labelled, WITHOUT_LABEL)

        def early(row: int) -> str:
            return before_timestamp(sent_times[row], int(labelled_at[row]), int(timestamps[row]))

        problems.add_mask(LABELLED_AT, given & labelled & (labelled_at < timestamps), early)
    if sent_sources is not None:
        sources = label_sources(sent_sources, problems)
        problems.add_mask(SOURCE, (sources != UNKNOWN_LABEL_SOURCE) & ~labelled, WITHOUT_LABEL)
    return labelled_at, sources


def before_timestamp(value: object, labelled_at: int, timestamp: int) -> str:
    """Why a label time is refused that precedes its prediction's timestamp."""
    return out_of_bounds(value, labelled_at, timestamp, BEFORE_TIMESTAMP)


def default_sources(sources: npt.NDArray[np.int8]) -> npt.NDArray[np.int8]:
    """The codes with ``confirmed`` where none was sent (every entry of a label update has a
    label)."""
    return np.where(sources == UNKNOWN_LABEL_SOURCE, _DEFAULT_CODE, sources).astype(np.int8)


def with_defaults(
    labelled: npt.NDArray[np.bool_],
    labelled_at: npt.NDArray[np.int64],
    sources: npt.NDArray[np.int8],
    timestamps: npt.NDArray[np.int64],
    now: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
    """The time and source stored with each row: as sent, else when calmon received it (never
    before the row's own timestamp: a prediction up to CALMON_MAX_FUTURE ahead of the database's
    clock is labelled at its timestamp) and ``confirmed``; none for a row without a label."""
    received = np.maximum(timestamps, now)
    times = np.where(labelled_at == UNKNOWN_LABEL_TIME, received, labelled_at)
    return (
        np.where(labelled, times, UNKNOWN_LABEL_TIME).astype(np.int64),
        np.where(labelled, default_sources(sources), UNKNOWN_LABEL_SOURCE).astype(np.int8),
    )
