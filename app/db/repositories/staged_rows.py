"""A batch's validated rows as the ingest repository writes them, and the binary COPY they
become.

Kept apart from app/db/repositories/ingest/ (the SQL): this is the pure-numpy preparation of the
rows, in the lock order every batch uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from app.db.copy_binary import Column, Fixed, Texts, copy_data, timestamptz
from app.monitoring.vocabulary import UNKNOWN_LABEL_SOURCE, UNKNOWN_LABEL_TIME

ROW_FIELD_COLUMNS: Final = ("amount", "entity")
"""The optional transaction fields: in :func:`predictions_copy_data`'s stream only when the
batch sent them (else they stay NULL at no cost), always in the stage."""
PREDICTION_COLUMNS: Final = (
    "model_id",
    "prediction_id",
    "window_start",
    "ts",
    "score",
    "label",
    "segment",
    "labelled_at",
    "label_source",
    *ROW_FIELD_COLUMNS,
)
"""The columns an ingest write sets, in the order of its streams and statements."""
STAGE_COLUMNS: Final = (
    "prediction_id",
    "ts_staged",
    "window_staged",
    "score",
    "label",
    "segment",
    "labelled_staged",
    "label_source",
    *ROW_FIELD_COLUMNS,
)
"""The columns of :func:`stage_copy_data`'s stream (the staging table of the upsert)."""


@dataclass(frozen=True)
class StagedRows:
    """Validated rows of one model, ready to write (timestamps in UTC epoch microseconds)."""

    model_id: int
    ids: list[str]
    timestamps: npt.NDArray[np.int64]
    windows: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int8]  # -1 means no label
    segments: list[str]
    # Each label's time and source code as stored (defaults filled in): UNKNOWN_LABEL_TIME and
    # UNKNOWN_LABEL_SOURCE (NULL) on rows without a label.
    labelled_at: npt.NDArray[np.int64]
    sources: npt.NDArray[np.int8]
    # None where the batch sent none; else NaN / "" on the rows without one (NULL), as
    # app.ingest.row_fields hands them over.
    amounts: npt.NDArray[np.float64] | None = None
    entities: list[str] | None = None

    def copied_columns(self) -> tuple[str, ...]:
        """The columns of :func:`predictions_copy_data`'s stream, in its order."""
        sent = {"amount": self.amounts is not None, "entity": self.entities is not None}
        return tuple(name for name in PREDICTION_COLUMNS if sent.get(name, True))

    def events(self) -> npt.NDArray[np.int64]:
        """Each row's newest event instant: its timestamp, or its label's time if later."""
        return np.maximum(self.timestamps, self.labelled_at)


@dataclass(frozen=True)
class StagedLabels:
    """A label update's entries as the ingest repository writes them (entry = the request's
    index, named by errors)."""

    ids: list[str]
    labels: npt.NDArray[np.int8]  # 0 or 1
    # UNKNOWN_LABEL_TIME: none sent, the database fills in when the update arrived (never
    # before the stored row's timestamp).
    labelled_at: npt.NDArray[np.int64]
    sources: npt.NDArray[np.int8]  # codes, defaults filled in


def predictions_copy_data(rows: StagedRows) -> tuple[bytes, bytes]:
    """The binary COPYs of ``rows`` into predictions (``rows.copied_columns()``) and into
    prediction_keys (model_id, prediction_id, window_start), both sorted by the bytes of the
    ids: the order in which every batch inserts and locks its rows, so that two batches sharing
    ids cannot deadlock."""
    ids = Texts.of(rows.ids)
    order = ids.byte_order()

    def ordered(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return values if order is None else values[order]

    segments = Texts.of(rows.segments)
    labels = ordered(rows.labels)
    model = Fixed(np.full(len(rows.ids), rows.model_id, dtype=">i4"))
    sorted_ids = ids if order is None else ids.take(order)
    windows = timestamptz(ordered(rows.windows))
    row_fields: list[Column] = []
    if rows.amounts is not None:
        row_fields.append(_amount_column(ordered(rows.amounts)))
    if rows.entities is not None:
        entities = Texts.optional(rows.entities)
        row_fields.append(entities if order is None else entities.take(order))
    predictions = copy_data(
        [
            model,
            sorted_ids,
            windows,
            timestamptz(ordered(rows.timestamps)),
            Fixed(ordered(rows.scores).astype(">f8")),
            Fixed(labels.astype(">i2"), nulls=labels < 0),
            segments if order is None else segments.take(order),
            *_label_columns(ordered(rows.labelled_at), ordered(rows.sources)),
            *row_fields,
        ],
        len(rows.ids),
    )
    return predictions, copy_data([model, sorted_ids, windows], len(rows.ids))


def stage_copy_data(rows: StagedRows) -> bytes:
    """The binary COPY of ``rows`` into the upsert's staging table (STAGE_COLUMNS), instants
    as epoch microseconds (int8: the statements convert them exactly)."""
    n = len(rows.ids)
    amounts = np.full(n, np.nan) if rows.amounts is None else rows.amounts
    return copy_data(
        [
            Texts.of(rows.ids),
            Fixed(rows.timestamps.astype(">i8")),
            Fixed(rows.windows.astype(">i8")),
            Fixed(rows.scores.astype(">f8")),
            Fixed(rows.labels.astype(">i2"), nulls=rows.labels < 0),
            Texts.of(rows.segments),
            Fixed(rows.labelled_at.astype(">i8"), nulls=rows.labelled_at == UNKNOWN_LABEL_TIME),
            _source_column(rows.sources),
            _amount_column(amounts),
            Texts.optional([""] * n if rows.entities is None else rows.entities),
        ],
        n,
    )


def _label_columns(
    labelled_at: npt.NDArray[np.int64], sources: npt.NDArray[np.int8]
) -> list[Column]:
    unknown = labelled_at == UNKNOWN_LABEL_TIME
    # The sentinel is masked as NULL; the shift to PostgreSQL's epoch must not overflow it.
    times = timestamptz(np.where(unknown, 0, labelled_at))
    return [Fixed(times.values, nulls=unknown), _source_column(sources)]


def _source_column(sources: npt.NDArray[np.int8]) -> Fixed:
    return Fixed(sources.astype(">i2"), nulls=sources == UNKNOWN_LABEL_SOURCE)


def _amount_column(amounts: npt.NDArray[np.float64]) -> Fixed:
    missing = np.isnan(amounts)
    return Fixed(amounts.astype(">f8"), nulls=missing if missing.any() else None)


def newest_per_window(
    windows: npt.NDArray[np.int64], events: npt.NDArray[np.int64]
) -> dict[int, int]:
    """The newest of ``events`` in each of ``windows`` (row by row), by window."""
    if windows.size == 0:
        return {}
    starts, where = np.unique(windows, return_inverse=True)
    newest = np.full(len(starts), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(newest, where, events)
    return dict(zip(starts.tolist(), newest.tolist(), strict=True))


def sqlite_datetimes(micros: npt.NDArray[np.int64]) -> list[str]:
    """The text SQLAlchemy's DateTime stores on SQLite: ``YYYY-MM-DD HH:MM:SS.ffffff``."""
    iso = np.datetime_as_string(micros.astype("datetime64[us]"), unit="us")
    return [value.replace("T", " ", 1) for value in iso.tolist()]


def sqlite_optional_datetimes(micros: npt.NDArray[np.int64]) -> list[str | None]:
    """:func:`sqlite_datetimes`, None where ``micros`` is UNKNOWN_LABEL_TIME."""
    unknown = micros == UNKNOWN_LABEL_TIME
    if unknown.all():
        return [None] * len(micros)
    texts: list[str | None] = list(sqlite_datetimes(np.where(unknown, 0, micros)))
    for row in np.flatnonzero(unknown).tolist():
        texts[row] = None
    return texts


def sqlite_optional_codes(codes: npt.NDArray[np.int8]) -> list[int | None]:
    """Source codes as SQLite parameters, None where unknown."""
    return [None if code == UNKNOWN_LABEL_SOURCE else code for code in codes.tolist()]


def sqlite_row_fields(rows: StagedRows) -> tuple[list[float | None], list[str | None]]:
    """Amounts and entities as SQLite parameters, None where none was sent."""
    n = len(rows.ids)
    amounts: list[float | None] = [None] * n
    if rows.amounts is not None:
        amounts = [None if math.isnan(value) else value for value in rows.amounts.tolist()]
    entities: list[str | None] = [None] * n
    if rows.entities is not None:
        entities = [value or None for value in rows.entities]
    return amounts, entities
