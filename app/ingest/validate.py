"""Validation of a parsed batch, column by column with numpy (no per-row Python on success).

Each check scans a whole column in C (``set(map(type, ...))``, numpy comparisons) and only
walks rows one by one to name them once it knows something is wrong. Every problem is counted;
the first ones by row are reported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

import numpy as np
import numpy.typing as npt

from app.ingest.errors import BATCH_LEVEL, MAX_REPORTED_ERRORS, BatchValidationError, RowError
from app.ingest.parse import RawBatch
from app.ingest.timestamps import iso_utc, micros_to_datetime, parse_timestamps
from app.input_rules import NUL_MESSAGE, contains_nul

MAX_ID_LENGTH: Final = 200  # predictions.prediction_id and batches.batch_id are String(200)
MAX_SEGMENT_LENGTH: Final = 100  # predictions.segment is String(100)
DEFAULT_SEGMENT: Final = "all"
_LABEL_RULE: Final = "must be 0, 1 or null"
NO_LABEL: Final = -1
"""Label value meaning "not known yet" in ``ValidBatch.labels`` (NULL in the database)."""


@dataclass(frozen=True)
class Limits:
    """Bounds a batch must respect (from Settings)."""

    max_rows: int
    min_timestamp_micros: int
    max_timestamp_micros: int
    max_segments: int = 200


@dataclass(frozen=True)
class ValidBatch:
    """A batch that passed validation, in typed columns."""

    batch_id: str
    ids: list[str]
    timestamps: npt.NDArray[np.int64]  # UTC epoch microseconds
    scores: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int8]  # 0, 1 or NO_LABEL
    segments: list[str]

    @property
    def rows(self) -> int:
        """Number of rows."""
        return len(self.ids)

    def content_hash(self) -> str:
        """SHA-256 of the canonical content: the parsed values, not the bytes sent.

        The same rows sent as row JSON, columnar JSON or CSV, with ``Z`` or ``+00:00``, hash the
        same; the row order matters. Lengths are hashed before the concatenated strings so that
        no two different id lists concatenate to the same bytes.
        """
        digest = hashlib.sha256()
        for strings in (self.ids, self.segments):
            digest.update(np.fromiter(map(len, strings), np.int64, len(strings)).tobytes())
            digest.update("".join(strings).encode())
        for array in (self.timestamps, self.scores, self.labels):
            digest.update(array.tobytes())
        return digest.hexdigest()


class Problems:
    """Collects the first problems of each field and counts all of them.

    Checks look at rows in order, so the first MAX_REPORTED_ERRORS problems of each field
    contain the first MAX_REPORTED_ERRORS of the batch once merged and sorted.
    """

    def __init__(self) -> None:
        self.reported: list[RowError] = []
        self.total = 0
        self._per_field: dict[str, int] = {}

    def add_mask(
        self, field: str, bad: npt.NDArray[np.bool_], message: str | Callable[[int], str]
    ) -> None:
        """Every row where ``bad`` holds; ``message`` may be a function of the row."""
        rows = np.flatnonzero(bad)
        self.total += len(rows)
        self.reported.extend(
            RowError(row, field, message if isinstance(message, str) else message(row))
            for row in rows[:MAX_REPORTED_ERRORS].tolist()
        )

    def add(self, error: RowError) -> None:
        self.total += 1
        seen = self._per_field.get(error.field, 0)
        if seen < MAX_REPORTED_ERRORS:
            self._per_field[error.field] = seen + 1
            self.reported.append(error)


def validate(raw: RawBatch, limits: Limits) -> ValidBatch:
    """Check every column of ``raw``; raise BatchValidationError listing the first problems.

    The row limit is checked by the caller before this (it is a 413, not a 422).
    """
    problems = Problems()
    batch_id = raw.batch_id
    if not isinstance(batch_id, str) or not 0 < len(batch_id) <= MAX_ID_LENGTH:
        problems.add(
            RowError(BATCH_LEVEL, "batch_id", f"must be a string of 1 to {MAX_ID_LENGTH} chars")
        )
    elif contains_nul(batch_id):
        problems.add(RowError(BATCH_LEVEL, "batch_id", NUL_MESSAGE))
    if raw.rows == 0:
        problems.add(RowError(BATCH_LEVEL, "rows", "the batch has no rows"))
    columns = raw.columns
    ids = _strings(columns["id"], "id", problems, default=None)
    segments = _strings(columns["segment"], "segment", problems, default=DEFAULT_SEGMENT)
    _unique(ids, problems)
    timestamps = _timestamps(columns["timestamp"], limits, problems)
    scores = _scores(columns["score"], problems)
    labels = _labels(columns["label"], problems)
    if problems.total:
        raise BatchValidationError(problems.reported, problems.total)
    assert isinstance(batch_id, str)  # a non-string batch_id was reported above
    return ValidBatch(batch_id, ids, timestamps, scores, labels, segments)


def _strings(
    values: list[object], field: str, problems: Problems, *, default: str | None
) -> list[str]:
    """A column of non-empty strings; ``default`` replaces nulls when the field is optional."""
    limit = MAX_ID_LENGTH if field == "id" else MAX_SEGMENT_LENGTH
    if default is not None and None in values:
        values = [default if value is None else value for value in values]
    if set(map(type, values)) <= {str}:
        strings = cast("list[str]", values)
        lengths = np.fromiter(map(len, strings), np.int64, len(strings))
        problems.add_mask(field, lengths == 0, "must not be empty")
        problems.add_mask(field, lengths > limit, f"longer than {limit} characters")
        if contains_nul("".join(strings)):  # one C-level scan; rows are named only if needed
            nul = np.fromiter(map(contains_nul, strings), np.bool_, len(strings))
            problems.add_mask(field, nul, NUL_MESSAGE)
        return strings
    for row, value in enumerate(values):
        if not isinstance(value, str) or not 0 < len(value) <= limit:
            problems.add(RowError(row, field, f"must be a string of 1 to {limit} characters"))
        elif contains_nul(value):
            problems.add(RowError(row, field, NUL_MESSAGE))
    return [str(value) for value in values]  # the batch is refused anyway


def _unique(ids: list[str], problems: Problems) -> None:
    if len(set(ids)) == len(ids):
        return
    first_seen: dict[str, int] = {}
    for row, value in enumerate(ids):
        if value in first_seen:
            problems.add(RowError(row, "id", f"duplicate of row {first_seen[value]}"))
        else:
            first_seen[value] = row


def _timestamps(values: list[object], limits: Limits, problems: Problems) -> npt.NDArray[np.int64]:
    parsed = parse_timestamps(values)
    for row, message in parsed.errors:
        problems.add(RowError(row, "timestamp", message))
    failed = np.zeros(len(values), dtype=bool)
    failed[[row for row, _ in parsed.errors]] = True
    micros = parsed.micros
    early = "before the earliest accepted, CALMON_MIN_TIMESTAMP"
    late = "after the latest accepted, now + CALMON_MAX_FUTURE"
    lowest, highest = limits.min_timestamp_micros, limits.max_timestamp_micros

    def too_early(row: int) -> str:
        return _out_of_bounds(values[row], int(micros[row]), lowest, early)

    def too_late(row: int) -> str:
        return _out_of_bounds(values[row], int(micros[row]), highest, late)

    problems.add_mask("timestamp", ~failed & (micros < lowest), too_early)
    problems.add_mask("timestamp", ~failed & (micros > highest), too_late)
    return micros


def _out_of_bounds(value: object, micros: int, bound: int, rule: str) -> str:
    """The refused timestamp as sent and in UTC, and the bound it passes."""
    instant = iso_utc(micros_to_datetime(micros))
    sent = repr(value)[:40] if isinstance(value, str) else repr(value)
    shown = sent if sent.strip("'") == instant else f"{sent} ({instant})"
    return f"{shown} is {rule} ({iso_utc(micros_to_datetime(bound))})"


def _scores(values: list[object], problems: Problems) -> npt.NDArray[np.float64]:
    if set(map(type, values)) <= {float, int}:
        try:
            scores = np.array(values, dtype=np.float64)
        except OverflowError:  # an integer too large for a float
            pass
        else:
            problems.add_mask("score", ~np.isfinite(scores), "must be a finite number")
            return scores
    scores = np.zeros(len(values), dtype=np.float64)
    for row, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, float | int):
            problems.add(RowError(row, "score", "must be a number"))
            continue
        number = float(value) if abs(value) < 1e308 else float("inf")
        if np.isfinite(number):
            scores[row] = number
        else:
            problems.add(RowError(row, "score", "must be a finite number"))
    return scores


def _labels(values: list[object], problems: Problems) -> npt.NDArray[np.int8]:
    """0, 1 or null. Floats 0.0/1.0 are accepted (what pandas writes for a column with gaps)."""
    types = set(map(type, values))
    if types <= {int, float, type(None)}:
        try:
            numbers = np.array(values, dtype=np.float64)  # None becomes NaN
        except OverflowError:  # an integer too large for a float: reported below
            pass
        else:
            unknown = np.isnan(numbers)
            problems.add_mask("label", ~unknown & (numbers != 0) & (numbers != 1), _LABEL_RULE)
            labels: npt.NDArray[np.int8] = np.where(unknown, NO_LABEL, numbers).astype(np.int8)
            return labels
    for row, value in enumerate(values):
        if value is not None and (isinstance(value, bool) or value not in (0, 1)):
            problems.add(RowError(row, "label", _LABEL_RULE))
    return np.zeros(len(values), dtype=np.int8)
