"""Downsampled precision-recall curves for plotting, regular or calibrated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.metrics._validation import check_pi0
from app.metrics.errors import InvalidInputError
from app.metrics.sketch import CurveSketch
from app.metrics.types import Float64Array


@dataclass(frozen=True, eq=False)
class PRCurve:
    """Points ``(recall, precision)`` at the thresholds ``thresholds`` (descending score).

    ``pi0`` is ``None`` for the measured curve, else the prior the precision is calibrated to.
    Empty when the curve is undefined (no positives; or, calibrated, no negatives).
    """

    recall: Float64Array
    precision: Float64Array
    thresholds: Float64Array
    pi0: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: parallel lists."""
        return {
            "pi0": self.pi0,
            "recall": self.recall.tolist(),
            "precision": self.precision.tolist(),
            "thresholds": self.thresholds.tolist(),
        }


def pr_curve(sketch: CurveSketch, *, pi0: float | None = None, max_points: int = 200) -> PRCurve:
    """Precision-recall points of the window, at most ``max_points`` of them.

    One point per distinct score holding a positive (ties form one point, as in average
    precision). Longer curves keep the first and last point and, between them, the points
    nearest to evenly spaced recall values. With ``pi0`` the precision is calibrated
    (Siblini et al. 2020, eq. 5).
    """
    if max_points < 2:
        raise InvalidInputError(f"max_points must be at least 2, got {max_points}")
    p0 = None if pi0 is None else check_pi0(pi0)
    positives, negatives = sketch.positives, sketch.negatives
    empty = np.empty(0)
    if positives == 0 or (p0 is not None and negatives == 0):
        return PRCurve(recall=empty, precision=empty, thresholds=empty, pi0=p0)
    groups = sketch.positives_at > 0
    tp = np.cumsum(sketch.positives_at)[groups].astype(np.float64)
    fp = np.cumsum(sketch.negatives_between + sketch.negatives_tied)[groups].astype(np.float64)
    if p0 is not None:
        pi = positives / sketch.n
        fp = fp * ((pi * (1.0 - p0)) / (p0 * (1.0 - pi)))
    recall = tp / positives
    precision = tp / (tp + fp)
    thresholds = sketch.scores[groups]
    if recall.size > max_points:
        targets = np.linspace(recall[0], 1.0, max_points)
        keep = np.unique(np.minimum(np.searchsorted(recall, targets), recall.size - 1))
        recall, precision, thresholds = recall[keep], precision[keep], thresholds[keep]
    return PRCurve(recall=recall, precision=precision, thresholds=thresholds, pi0=p0)
