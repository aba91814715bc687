"""Curves of a window for plotting: precision-recall (regular or calibrated), ROC, PR-Gain.

Each is read from the curve sketch (one entry per distinct score holding a positive), so a
stored window draws its curves without its rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

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


def _downsample(count: int, max_points: int) -> npt.NDArray[np.intp]:
    """At most ``max_points`` indices of ``count`` points, evenly spread, first and last kept."""
    if count <= max_points:
        return np.arange(count)
    return np.unique(np.linspace(0, count - 1, max_points).round().astype(np.intp))


def _check_points(max_points: int) -> None:
    if max_points < 2:
        raise InvalidInputError(f"max_points must be at least 2, got {max_points}")


@dataclass(frozen=True, eq=False)
class RocPoints:
    """The ROC polyline's corners ``(fpr, tpr)``, from (0, 0) to (1, 1), fpr non-decreasing.

    Empty when the curve is undefined (no positives or no negatives). The ROC curve does not
    depend on the fraud rate, so it has no calibrated twin.
    """

    fpr: Float64Array
    tpr: Float64Array

    def to_dict(self) -> dict[str, Any]:
        """JSON form: parallel lists."""
        return {"fpr": self.fpr.tolist(), "tpr": self.tpr.tolist()}


def roc_points(sketch: CurveSketch, *, max_points: int = 400) -> RocPoints:
    """The ROC curve as its corners, at most ``max_points`` of them.

    Between two scores holding positives the negatives scored there move the curve right
    (a corner where it turns up again), and the rows tied at a positive's score move it along the
    diagonal of their counts, as scikit-learn's ``roc_curve`` joins tied rows. Collinear points
    are left out: the corners are ``roc_curve(drop_intermediate=True)``'s points with its
    remaining collinear ones removed.
    """
    _check_points(max_points)
    positives, negatives = sketch.positives, sketch.negatives
    if positives == 0 or negatives == 0:
        empty = np.empty(0)
        return RocPoints(fpr=empty, tpr=empty)
    groups = sketch.positives_at > 0
    tp = np.cumsum(sketch.positives_at)[groups].astype(np.float64)
    fp_after = np.cumsum(sketch.negatives_between + sketch.negatives_tied)[groups]
    fp_before = fp_after - sketch.negatives_tied[groups]
    tp_before = np.concatenate([[0.0], tp[:-1]])
    # Per entry: the corner after the negatives above it, then the point after its tied rows.
    fp = np.concatenate([[0.0], np.column_stack([fp_before, fp_after]).ravel(), [negatives]])
    tps = np.concatenate([[0.0], np.column_stack([tp_before, tp]).ravel(), [positives]])
    x, y = fp / negatives, tps / positives
    keep = _corners(x, y)
    x, y = x[keep], y[keep]
    chosen = _downsample(x.size, max_points)
    return RocPoints(fpr=x[chosen], tpr=y[chosen])


def _corners(x: Float64Array, y: Float64Array) -> npt.NDArray[np.bool_]:
    """Points where a polyline turns: duplicates and points inside a straight run dropped."""
    distinct = np.concatenate([[True], (np.diff(x) != 0.0) | (np.diff(y) != 0.0)])
    x, y = x[distinct], y[distinct]
    index = np.flatnonzero(distinct)
    if x.size <= 2:
        keep = np.zeros(distinct.size, dtype=bool)
        keep[index] = True
        return keep
    dx0, dy0 = x[1:-1] - x[:-2], y[1:-1] - y[:-2]
    dx1, dy1 = x[2:] - x[1:-1], y[2:] - y[1:-1]
    # Counts divided by the same totals: a cross product of exactly 0 within rounding.
    turn = np.abs(dx0 * dy1 - dy0 * dx1) > 1e-12
    keep = np.zeros(distinct.size, dtype=bool)
    keep[index[np.concatenate([[True], turn, [True]])]] = True
    return keep


@dataclass(frozen=True, eq=False)
class GainCurve:
    """The PR-Gain curve ``(recall_gain, precision_gain)`` from recall gain 0 up, at prior
    ``pi0`` (``None``: the window's own fraud rate). Empty when undefined."""

    recall_gain: Float64Array
    precision_gain: Float64Array
    pi0: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: parallel lists."""
        return {
            "pi0": self.pi0,
            "recall_gain": self.recall_gain.tolist(),
            "precision_gain": self.precision_gain.tolist(),
        }


def pr_gain_curve(
    sketch: CurveSketch, *, pi0: float | None = None, max_points: int = 400
) -> GainCurve:
    """The PR-Gain curve (Flach & Kull 2015) whose area is the kernel's ``pr_gain_auc``.

    Precision gain ``1 - (P/N)(FP/TP)`` is the same at any prior (calibration scales FP by
    k, and ``(pi0 / (1 - pi0)) k = P/N``); recall gain ``(1 - p P/TP) / (1 - p)`` takes the
    prior p (the window's, or ``pi0``). Each entry contributes the point before its tied
    negatives and the point after them (the negatives above it lower the precision gain at
    an unchanged recall gain); the curve starts where recall gain crosses 0, interpolated in
    contingency space as the kernel's area is, and ends with every row flagged (recall gain 1,
    precision gain 0). With at most ``max_points`` points the
    trapezoid area of the returned points is ``pr_gain_auc``.
    """
    _check_points(max_points)
    p0 = None if pi0 is None else check_pi0(pi0)
    positives, negatives = sketch.positives, sketch.negatives
    if positives == 0 or negatives == 0:
        empty = np.empty(0)
        return GainCurve(recall_gain=empty, precision_gain=empty, pi0=p0)
    prior = positives / sketch.n if p0 is None else p0
    groups = sketch.positives_at > 0
    pos = sketch.positives_at[groups].astype(np.float64)
    tied = sketch.negatives_tied[groups].astype(np.float64)
    tp = np.cumsum(pos)
    fp = np.cumsum(sketch.negatives_between + sketch.negatives_tied)[groups].astype(np.float64)
    crossing = prior * positives  # recall gain is 0 where TP = p P
    m = int(np.argmax(tp > crossing))
    tp_left = tp[m] - pos[m]
    fp_x = fp[m] - tied[m] + (crossing - tp_left) / pos[m] * tied[m]
    # From the crossing: its point, then each entry's (after) and the next one's (before) points.
    tp_points = [np.array([crossing, tp[m]])]
    fp_points = [np.array([fp_x, fp[m]])]
    if m + 1 < tp.size:
        before_tp, before_fp = tp[m + 1 :] - pos[m + 1 :], fp[m + 1 :] - tied[m + 1 :]
        tp_points.append(np.column_stack([before_tp, tp[m + 1 :]]).ravel())
        fp_points.append(np.column_stack([before_fp, fp[m + 1 :]]).ravel())
    # The end: every row flagged, the negatives below the lowest fraud too (precision gain 0).
    tp_points.append(np.array([float(positives)]))
    fp_points.append(np.array([float(negatives)]))
    tps, fps = np.concatenate(tp_points), np.concatenate(fp_points)
    recall_gain = (1.0 - crossing / tps) / (1.0 - prior)
    # 1 - (P/N)(FP/TP) over one denominator: exactly 0 with every row flagged.
    precision_gain = (tps * negatives - positives * fps) / (tps * negatives)
    chosen = _downsample(recall_gain.size, max_points)
    return GainCurve(recall_gain=recall_gain[chosen], precision_gain=precision_gain[chosen], pi0=p0)
