"""A stored window's label counts, read the same way by every repository that needs them.

The pi0 policy, the early estimates and the nowcast backlog all read a window's label counts
(``app.monitoring.pi0.WindowLabels``); the columns and their mapping live here once.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement

from app.db.metrics_tables import WindowMetrics
from app.monitoring.pi0 import WindowLabels

LABEL_COLUMNS = (
    WindowMetrics.window_start,
    WindowMetrics.labelled,
    WindowMetrics.positives,
    WindowMetrics.label_coverage,
)
"""The columns :func:`window_labels` maps, first in a select that reads them."""


def window_labels(row: Any) -> WindowLabels:
    """The label counts of a row whose first columns are :data:`LABEL_COLUMNS`."""
    start, labelled, positives, coverage = row[:4]
    return WindowLabels(start, int(labelled), int(positives), coverage)


def of_segment(model_id: int, segment: str) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """The WHERE clause selecting one segment's windows of one model."""
    return (WindowMetrics.model_id == model_id, WindowMetrics.segment == segment)
