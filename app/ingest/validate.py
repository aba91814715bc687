"""Validation of a parsed batch, column by column with numpy (no per-row Python on success).

Each check scans a whole column in C (``set(map(type, ...))``, numpy comparisons) and only
walks rows one by one to name them once it knows something is wrong. Every problem is counted;
the first ones by row are reported.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Final, cast

import numpy as np
import numpy.typing as npt

from app.ingest.errors import BATCH_LEVEL, BatchValidationError, Problems, RowError
from app.ingest.label_times import batch_label_fields, with_defaults
from app.ingest.parse import RawBatch
from app.ingest.row_fields import AMOUNT, ENTITY, amounts, entities
from app.ingest.timestamps import out_of_bounds, parse_timestamps
from app.input_rules import NUL_MESSAGE, contains_nul
from app.monitoring.vocabulary import (
    DEFAULT_LABEL_SOURCE,
    LABEL_SOURCE_CODES,
    UNKNOWN_LABEL_SOURCE,
    UNKNOWN_LABEL_TIME,
)

MAX_ID_LENGTH: Final = 200  # predictions.prediction_id and batches.batch_id are String(200)
MAX_SEGMENT_LENGTH: Final = 100  # predictions.segment is String(100)
DEFAULT_SEGMENT: Final = "all"
_LABEL_RULE: Final = "must be 0, 1 or null"
_DECIMAL_COMMA: Final = re.compile(r"[+-]?\d*,\d+")
NO_LABEL: Final = -1
"""Label value meaning "not known yet" in ``ValidBatch.labels`` (NULL in the database)."""
_DEFAULT_CODE: Final = LABEL_SOURCE_CODES[DEFAULT_LABEL_SOURCE]


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
    # As sent: UNKNOWN_LABEL_TIME and UNKNOWN_LABEL_SOURCE where a row sent none (label_columns
    # fills in the defaults, which depend on when the batch arrived).
    labelled_at: npt.NDArray[np.int64]  # UTC epoch microseconds
    sources: npt.NDArray[np.int8]  # LABEL_SOURCE_CODES
    # None where no row sent one; else NO_AMOUNT / NO_ENTITY on the rows that sent none
    # (app.ingest.row_fields).
    amounts: npt.NDArray[np.float64] | None
    entities: list[str] | None

    @property
    def rows(self) -> int:
        """Number of rows."""
        return len(self.ids)

    def label_columns(self, now: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
        """The label time and source to store per row, defaults filled in for a batch that
        arrived at ``now`` (epoch microseconds): see app.ingest.label_times.with_defaults."""
        labelled = self.labels != NO_LABEL
        return with_defaults(labelled, self.labelled_at, self.sources, self.timestamps, now)

    def content_hash(self) -> str:
        """SHA-256 of the canonical content: the parsed values, not the bytes sent.

        The same rows sent as row JSON, columnar JSON or CSV, with ``Z`` or ``+00:00``, hash the
        same; the row order matters. Lengths are hashed before the concatenated strings so that
        no two different id lists concatenate to the same bytes.

        Label times and sources count as sent: a time left to its default (the arrival) hashes
        as absent, so the same batch sent again is a replay, not a conflict; ``confirmed``, the
        default source, hashes as absent too. Amounts and entities count where some row sent
        one. A batch that sends none of these hashes exactly as it did before they existed (a
        batch stored then is still replayed).
        """
        digest = hashlib.sha256()
        for strings in (self.ids, self.segments):
            digest.update(np.fromiter(map(len, strings), np.int64, len(strings)).tobytes())
            digest.update("".join(strings).encode())
        for array in (self.timestamps, self.scores, self.labels):
            digest.update(array.tobytes())
        if (self.labelled_at != UNKNOWN_LABEL_TIME).any():
            digest.update(b"labelled_at")
            digest.update(self.labelled_at.tobytes())
        sources = np.where(self.sources == _DEFAULT_CODE, UNKNOWN_LABEL_SOURCE, self.sources)
        if sources.any():
            digest.update(b"source")
            digest.update(sources.astype(np.int8).tobytes())
        if self.amounts is not None:
            digest.update(b"amount")
            digest.update(self.amounts.tobytes())
        if self.entities is not None:
            # NUL-separated: no entity holds one (app.input_rules), so no two lists join to
            # the same text, without a pass for the lengths. NO_ENTITY is the empty string.
            digest.update(b"entity")
            digest.update("\x00".join(self.entities).encode())
        return digest.hexdigest()


def validate(raw: RawBatch, limits: Limits) -> ValidBatch:
    """Check every column of ``raw``; raise BatchValidationError listing the first problems.

    The row limit is checked by the caller before this (it is a 413, not a 422).
    """
    problems = Problems()
    batch_id = raw.batch_id
    # Blank is no id: a header " " would otherwise key every CSV batch sent with it.
    if not isinstance(batch_id, str) or not batch_id.strip() or len(batch_id) > MAX_ID_LENGTH:
        problems.add(
            RowError(
                BATCH_LEVEL,
                "batch_id",
                f"must be a string of 1 to {MAX_ID_LENGTH} chars, not blank",
            )
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
    labelled_at, sources = batch_label_fields(
        columns, labels != NO_LABEL, timestamps, limits.max_timestamp_micros, problems
    )
    sent_amounts, sent_entities = columns.get(AMOUNT), columns.get(ENTITY)
    row_amounts = None if sent_amounts is None else amounts(sent_amounts, problems)
    row_entities = None if sent_entities is None else entities(sent_entities, problems)
    if problems.total:
        raise BatchValidationError(problems.reported, problems.total)
    assert isinstance(batch_id, str)  # a non-string batch_id was reported above
    return ValidBatch(
        batch_id,
        ids,
        timestamps,
        scores,
        labels,
        segments,
        labelled_at,
        sources,
        row_amounts,
        row_entities,
    )


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
        return out_of_bounds(values[row], int(micros[row]), lowest, early)

    def too_late(row: int) -> str:
        return out_of_bounds(values[row], int(micros[row]), highest, late)

    problems.add_mask("timestamp", ~failed & (micros < lowest), too_early)
    problems.add_mask("timestamp", ~failed & (micros > highest), too_late)
    return micros


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
            problems.add(RowError(row, "score", not_a_number(value)))
            continue
        number = float(value) if abs(value) < 1e308 else float("inf")
        if np.isfinite(number):
            scores[row] = number
        else:
            problems.add(RowError(row, "score", "must be a finite number"))
    return scores


def not_a_number(value: object) -> str:
    """Why a value is no number, saying what would be: a number is a JSON number (a string
    holding one is refused, as in every numeric field), with a decimal point."""
    if not isinstance(value, str):
        return "must be a number"
    shown = repr(value[:40])
    if _DECIMAL_COMMA.fullmatch(value.strip()):
        pointed = value.strip().replace(",", ".")
        return f"{shown} is not a number: write its decimal mark as a point ({pointed})"
    try:
        number = float(value)
    except ValueError:
        return f"must be a number, not the text {shown}"
    if not math.isfinite(number):  # "NaN", "inf": no finite number to send instead
        return f"must be a finite number, not the string {shown}"
    return f"must be a JSON number, not the string {shown} (send {value.strip()} unquoted)"


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
