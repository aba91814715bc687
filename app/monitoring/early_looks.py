"""When a window's labels are looked at, and which look each label counts from.

A window is estimated at *looks*: the window boundaries after its end, on the model's clock
(:class:`Looks`). A label counts from the first look after its ``labelled_at`` (a look counts
the labels stamped before it), so an estimate depends on the stream, not on when the worker
ran, and a look's labels are all in once the clock has passed it: the early detector
(app/monitoring/early.py) tests a window once per look (what its false-alarm bound counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt

from app.metrics.blocks import blocks
from app.metrics.reporting import UNKNOWN_LOOK, Arrivals
from app.metrics.types import Float64Array, Int64Array
from app.monitoring.vocabulary import UNKNOWN_LABEL_TIME


@dataclass(frozen=True)
class Looks:
    """The looks at a model's windows: the window boundaries after each window's end, the
    newest being ``as_of`` (the newest boundary at or before the model's clock)."""

    as_of: datetime
    length: timedelta

    def look_of(self, window_start: datetime) -> int:
        """How many looks a window has had: 0 when it just ended, -1 while it is open
        (rounded: a local day across a DST change lasts 23 or 25 hours)."""
        end = window_start + self.length
        return round((self.as_of - end) / self.length)


def arrival_looks(labelled_at: Int64Array, window_end: datetime, length: timedelta) -> Int64Array:
    """The look each label (``labelled_at`` in UTC epoch microseconds, UNKNOWN_LABEL_TIME for a
    label of unknown time) of a window ending at ``window_end`` counts from: the first look
    (``length`` apart from the end on) strictly after it.

    Strictly: a look counts the labels of the looks before it, which are all in once the
    model's clock has passed it. A label stamped on the boundary itself (an export stamped at
    midnight) belongs to the day that starts there; counted at that look, the look's evidence
    grew with every request of the export, and the page was tested again on each."""
    end = _micros(window_end)
    step = length // timedelta(microseconds=1)
    # In place on one array: a window's every labelled row passes here, and the expression
    # with np.where held five temporaries of a row each (a 10^7-row window: 400 MB).
    looks: Int64Array = labelled_at.astype(np.int64)  # a copy: the caller's array stays
    looks -= end
    looks //= step
    looks += 1
    looks[labelled_at < end] = 0
    looks[labelled_at == UNKNOWN_LABEL_TIME] = UNKNOWN_LOOK
    return looks


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(instant: datetime) -> int:
    return (instant - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True)
class LabelledRows:
    """A window segment's labelled rows, aligned: their scores, labels, ``labelled_at`` (UTC
    epoch microseconds, :data:`UNKNOWN_LABEL_TIME` when not kept) and source codes; with the
    model's score bins (their upper edges) and threshold."""

    scores: Float64Array
    labels: npt.NDArray[np.int8]
    labelled_at: Int64Array
    sources: npt.NDArray[np.int8]
    edges: Float64Array
    threshold: float

    def arrivals(self, window_end: datetime, length: timedelta) -> Arrivals:
        """The rows as arrivals by look (``length`` apart from ``window_end`` on): a fraud by
        its score's bin, a cleared row by whether it was flagged. (Each computed for the rows
        that need it: a window's rows are nearly all cleared ones, and a bin per row cost as
        much as counting them.)"""
        # Block by block (app/metrics/blocks.py), the blocks' counts merged.
        parts = [self._block(block, window_end, length) for block in blocks(self.labels.size)]
        return parts[0] if len(parts) == 1 else Arrivals.merged(parts)

    def _block(self, rows: slice, window_end: datetime, length: timedelta) -> Arrivals:
        """The arrivals of ``rows``."""
        scores, labels, sources = self.scores[rows], self.labels[rows], self.sources[rows]
        arrival = arrival_looks(self.labelled_at[rows], window_end, length)
        fraud = labels == 1
        cleared = ~fraud
        bins = np.searchsorted(self.edges, scores[fraud], side="right")
        frauds = (bins, arrival[fraud], sources[fraud])
        flagged = (scores >= self.threshold)[cleared]
        cleared_keys = (flagged, arrival[cleared], sources[cleared])
        del arrival  # every row's look, no longer needed while the cleared ones are counted
        return Arrivals.of(frauds=frauds, cleared=cleared_keys)
