"""Class-imbalance sensitivity of confusion-matrix metrics (seed paper 002:
"Measuring Class-Imbalance Sensitivity of Deterministic Performance Evaluation Metrics").

A point (TNR, TPR) of the contingency space stands for every confusion matrix with those rates.
At imbalance ratio 1:r (one positive per r negatives) its relative form is

    tp = TPR, fn = 1 - TPR, tn = r TNR, fp = r (1 - TNR),

and a metric evaluated on it, rescaled to [0, 1], is the metric surface C^r. The sensitivity
s^r is the volume between C^1 and C^r over the unit square, approximated by the paper's Riemann
sum over a ``grid x grid`` lattice. Two conventions the paper leaves implicit are fixed here:

- the lattice is cell-centred ((i + 1/2) / grid), and each cell's |difference| is multiplied by
  its area 1 / grid^2: the paper's sum omits the area, but states that s lies in [0, 1) with the
  unit cube as upper bound, which only the area-weighted sum satisfies;
- metrics whose range is [-1, 1] (tss, hss, youden) are rescaled by (m + 1) / 2, the paper's
  "re-scaling the range of these functions to [0, 1]".

Undefined cells: precision and calibrated precision are 0/0 where nothing is predicted
positive, TPR = 0 and TNR = 1. f1 in its count form 2 tp / (2 tp + fp + fn) is defined everywhere
(tp + fn = 1 > 0), and hss's denominator p (fn + tn) + n (tp + fp) is positive for r > 0. On the
cell-centred lattice no cell is undefined (every centre has TPR > 0), so the volume is exact for
the lattice; ``metric_surface`` on arbitrary rates reports such cells in ``defined`` and leaves
their value NaN so that no caller can mistake them for a score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics.types import BoolArray, Float64Array

SURFACE_METRICS = (
    "accuracy",
    "precision",
    "recall",
    "f1",
    "tss",
    "hss",
    "youden",
    "calibrated_precision",
    "fpr",
    "calibrated_f1",
)
_SIGNED = frozenset({"tss", "hss", "youden"})


@dataclass(frozen=True)
class MetricSurface:
    """A metric over contingency-space rates, rescaled to [0, 1].

    ``values`` is NaN exactly where ``defined`` is False (a 0/0 cell); nothing else is NaN.
    """

    metric: str
    ratio: float
    tnr: Float64Array
    tpr: Float64Array
    values: Float64Array
    defined: BoolArray


def contingency_grid(grid: int = 100) -> tuple[Float64Array, Float64Array]:
    """Cell centres of a ``grid x grid`` lattice over the unit square: ``(tnr, tpr)`` meshes."""
    if int(grid) != grid or grid < 1:
        raise ValueError(f"grid must be a positive integer, got {grid!r}")
    centres = (np.arange(int(grid), dtype=np.float64) + 0.5) / int(grid)
    tnr, tpr = np.meshgrid(centres, centres, indexing="xy")
    return tnr, tpr


def _ratio(value: float) -> float:
    r = float(value)
    if not (np.isfinite(r) and r > 0.0):
        raise ValueError(
            f"ratio (negatives per positive) must be positive and finite, got {value!r}"
        )
    return r


def _divide(numerator: Float64Array, denominator: Float64Array) -> tuple[Float64Array, BoolArray]:
    defined = denominator != 0.0
    safe = np.where(defined, denominator, 1.0)
    return np.where(defined, numerator / safe, np.nan), defined


def metric_surface(
    metric: str,
    ratio: float,
    tnr: npt.ArrayLike,
    tpr: npt.ArrayLike,
    *,
    pi0: float | None = None,
) -> MetricSurface:
    """Evaluate ``metric`` on the relatively identical confusion matrices at ratio 1:``ratio``.

    Parameters
    ----------
    metric : str
        One of ``SURFACE_METRICS``.
    ratio : float
        Negatives per positive (49 for the paper's 1:49); 1 is the balanced surface.
    tnr, tpr : array_like
        Rates in [0, 1], broadcast together.
    pi0 : float, optional
        Reference prior of ``calibrated_precision`` and ``calibrated_f1`` (Siblini et al.
        eq. 5), required for them.

    Returns
    -------
    MetricSurface
        Values rescaled to [0, 1]; 0/0 cells are flagged in ``defined`` and hold NaN.
    """
    if metric not in SURFACE_METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose from {', '.join(SURFACE_METRICS)}")
    r = _ratio(ratio)
    tn_rate, tp_rate = np.broadcast_arrays(
        np.asarray(tnr, dtype=np.float64), np.asarray(tpr, dtype=np.float64)
    )
    for name, rates in (("tnr", tn_rate), ("tpr", tp_rate)):
        if not np.all(np.isfinite(rates)) or np.any((rates < 0.0) | (rates > 1.0)):
            raise ValueError(f"{name} must be finite and within [0, 1]")
    tp, fn = tp_rate, 1.0 - tp_rate
    tn, fp = r * tn_rate, r * (1.0 - tn_rate)
    positives, negatives = 1.0, r
    always = np.ones(tp.shape, dtype=bool)

    if metric == "accuracy":
        values, defined = (tp + tn) / (positives + negatives), always
    elif metric == "precision":
        values, defined = _divide(tp, tp + fp)
    elif metric == "recall":
        values, defined = tp / positives, always
    elif metric == "f1":
        # 2 P R / (P + R) = 2 tp / (2 tp + fp + fn); 0/0 only without any tp, fp or fn.
        values, defined = _divide(2.0 * tp, 2.0 * tp + fp + fn)
    elif metric == "tss":
        values, defined = tp / positives - fp / negatives, always
    elif metric == "hss":
        values, defined = _divide(
            2.0 * (tp * tn - fn * fp), positives * (fn + tn) + negatives * (tp + fp)
        )
    elif metric == "fpr":
        values, defined = fp / negatives, always
    elif metric == "youden":
        # The paper's form (tp tn - fn fp) / ((tp + fn)(fp + tn)); it equals TPR + TNR - 1.
        values, defined = (tp * tn - fn * fp) / (positives * negatives), always
    else:
        if pi0 is None or not (0.0 < float(pi0) < 1.0):
            raise ValueError(f"{metric} needs pi0 in (0, 1)")
        # Siblini et al. eq. (5) on the counts: k = pi (1 - pi0) / (pi0 (1 - pi)), pi = p / (p + n).
        pi = positives / (positives + negatives)
        k = pi * (1.0 - float(pi0)) / (float(pi0) * (1.0 - pi))
        if metric == "calibrated_precision":
            values, defined = _divide(tp, tp + k * fp)
        else:  # calibrated_f1: the harmonic mean of calibrated precision and recall
            values, defined = _divide(2.0 * tp, 2.0 * tp + k * fp + fn)

    if metric in _SIGNED:
        values = (values + 1.0) / 2.0
    return MetricSurface(metric, r, tn_rate, tp_rate, values, defined)


def imbalance_sensitivity(
    metric: str, ratio: float, grid: int = 100, *, pi0: float | None = None
) -> float:
    """Volume between a metric's surfaces at 1:1 and at 1:``ratio`` (seed paper 002, section 3).

    ``s = sum_ij |C1_ij - Cr_ij| / grid^2`` on the cell-centred lattice, in [0, 1): 0 for an
    imbalance-agnostic metric (recall, tss, youden, calibrated precision up to rounding).

    Parameters
    ----------
    metric : str
        One of ``SURFACE_METRICS``.
    ratio : float
        Negatives per positive of the imbalanced surface.
    grid : int
        Lattice cells per axis.
    pi0 : float, optional
        Reference prior, required for ``calibrated_precision``.
    """
    tnr, tpr = contingency_grid(grid)
    balanced = metric_surface(metric, 1.0, tnr, tpr, pi0=pi0)
    skewed = metric_surface(metric, ratio, tnr, tpr, pi0=pi0)
    # Every cell centre has TPR > 0, so no cell of either surface is 0/0 (see module notes).
    cell_area = 1.0 / float(grid) ** 2
    return float(np.abs(balanced.values - skewed.values).sum() * cell_area)
