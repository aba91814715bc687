"""When a window's labels are complete enough to judge it.

Fraud labels arrive days to weeks after the prediction, and the first to arrive are biased (a
chargeback comes before a "this was fine"), so a window is judged only once it is *mature*: its
labelled share reached the model's ``min_label_coverage`` and it holds labelled negatives. Until
then it has values (the best estimate so far) but no verdict, and the alert state rests on the
newest mature window instead.
"""

from __future__ import annotations

from app.monitoring.pi0 import WindowLabels


def immaturity(window: WindowLabels, min_label_coverage: float) -> str | None:
    """Why ``window`` is not mature yet, or None if it is."""
    coverage = window.label_coverage
    if coverage is None or coverage < min_label_coverage:
        return (
            f"waiting for labels: coverage {coverage or 0.0:.3f} "
            f"below min_label_coverage {min_label_coverage:.3f}"
        )
    if window.negatives <= 0:
        return "waiting for labels: no labelled negatives yet"
    return None


def is_mature(window: WindowLabels, min_label_coverage: float) -> bool:
    """Whether ``window`` may be judged (see :func:`immaturity`)."""
    return immaturity(window, min_label_coverage) is None
