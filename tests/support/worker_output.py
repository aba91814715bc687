"""The worker's results written straight into the database: a computed window and its metric
values.

For tests of what reads them (the Prometheus collector, the Grafana dashboard's SQL), which pin
the mapping from rows to what is shown; the worker's own tests compute these rows for real.
Each builder fills the fields nothing under test reads with plain values; pass any field to
set it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.db.metrics_tables import WindowMetrics, WindowMetricValue

# A stored early estimate (window_metrics.early), as app/monitoring/early.py writes it.
EARLY: dict[str, Any] = {
    "estimate": True,
    "as_of": "2026-11-02T00:00:00+00:00",
    "look": 1,
    "key": "k",
    "reference_version": 1,
    "pi0": 0.004,
    "labels_so_far": {"frauds": 31, "legitimate": 270, "by_source": {"feedback": 301}},
    "frauds_total": 41.0,
    "frauds_total_ci": [33.0, 60.0],
    "pi": 0.0041,
    "pi_ci": [0.0033, 0.006],
    "precision": 0.11,
    "precision_ci": [0.1, 0.12],
    "recall": 0.7,
    "recall_ci": [0.5, 0.85],
    "average_precision": 0.33,
    "average_precision_ci": [0.2, 0.45],
    "undefined": {},
    "alert_precision_feedback": {
        "value": 0.1,
        "ci": [0.07, 0.14],
        "reviewed": 301,
        "confirmed": 31,
    },
    "reason": None,
    "evidence": {"frauds": 31, "llr": -0.5, "z": -0.2, "dispersion": 1.0, "increment": -0.5},
}


def add_window_metrics(
    session: Session,
    model_id: int,
    window_start: datetime,
    *,
    counts: tuple[int, int, int],
    **fields: object,
) -> WindowMetrics:
    """A computed window of the segment "all" with ``counts`` = (rows, labelled, positives);
    the negatives, the label coverage and the fraud rate follow from them, and ``mature`` from
    the default rule (judged, or 80% covered with negatives) unless given."""
    rows, labelled, positives = counts
    values: dict[str, object] = {
        "segment": "all",
        "rows_total": rows,
        "labelled": labelled,
        "positives": positives,
        "negatives": labelled - positives,
        "label_coverage": labelled / rows,
        "pi": positives / labelled,
        "pi0": 0.005,
        "threshold": 0.5,
        "verdict": "stable",
        "source_version": 1,
        "duration_seconds": 0.1,
    }
    values.update(fields)
    covered = labelled >= 0.8 * rows and labelled > positives
    values.setdefault("mature", values.get("judged_at") is not None or covered)
    row = WindowMetrics(model_id=model_id, window_start=window_start, **values)
    session.add(row)
    session.flush()
    return row


def add_metric_value(
    session: Session, window: WindowMetrics, metric: str, **fields: object
) -> WindowMetricValue:
    """One metric of ``window`` (undefined unless values are given)."""
    row = WindowMetricValue(
        model_id=window.model_id,
        window_start=window.window_start,
        segment=window.segment,
        metric=metric,
        **fields,
    )
    session.add(row)
    session.flush()
    return row
