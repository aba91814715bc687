"""A batch's validated rows as the ingest repository writes them, and the binary COPY they
become.

Kept apart from app/db/repositories/ingest.py (the SQL): this is the pure-numpy preparation of the
rows, in the lock order every batch uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from app.db.copy_binary import Fixed, Texts, copy_data, timestamptz

PREDICTION_COLUMNS: Final = (
    "model_id",
    "prediction_id",
    "window_start",
    "ts",
    "score",
    "label",
    "segment",
)
"""The columns of :func:`predictions_copy_data`'s stream, in its order."""


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


def predictions_copy_data(rows: StagedRows) -> tuple[bytes, bytes]:
    """The binary COPYs of ``rows`` into predictions (model_id, prediction_id, window_start, ts,
    score, label, segment) and into prediction_keys (model_id, prediction_id, window_start),
    both sorted by the bytes of the ids: the order in which every batch inserts and locks its
    rows, so that two batches sharing ids cannot deadlock."""
    ids = Texts.of(rows.ids)
    order = ids.byte_order()

    def ordered(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return values if order is None else values[order]

    segments = Texts.of(rows.segments)
    labels = ordered(rows.labels)
    model = Fixed(np.full(len(rows.ids), rows.model_id, dtype=">i4"))
    sorted_ids = ids if order is None else ids.take(order)
    windows = timestamptz(ordered(rows.windows))
    predictions = copy_data(
        [
            model,
            sorted_ids,
            windows,
            timestamptz(ordered(rows.timestamps)),
            Fixed(ordered(rows.scores).astype(">f8")),
            Fixed(labels.astype(">i2"), nulls=labels < 0),
            segments if order is None else segments.take(order),
        ],
        len(rows.ids),
    )
    return predictions, copy_data([model, sorted_ids, windows], len(rows.ids))


def sqlite_datetimes(micros: npt.NDArray[np.int64]) -> list[str]:
    """The text SQLAlchemy's DateTime stores on SQLite: ``YYYY-MM-DD HH:MM:SS.ffffff``."""
    iso = np.datetime_as_string(micros.astype("datetime64[us]"), unit="us")
    return [value.replace("T", " ", 1) for value in iso.tolist()]
