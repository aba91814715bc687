"""Accept a ROC curve as plain arrays or as any object that can produce one.

The skew functions take ``(tpr, fpr)`` arrays, an object with ``roc_points()`` (a curve sketch) or
an object with ``.sketch.roc_points()`` (an evaluation result). Duck typing keeps this module
independent of the kernel's classes.
"""

from __future__ import annotations

from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from app.metrics.types import Float64Array


@runtime_checkable
class HasRocPoints(Protocol):
    """Anything that yields its ROC points, e.g. ``CurveSketch``."""

    def roc_points(self) -> tuple[Float64Array, Float64Array]:
        """Return ``(tpr, fpr)`` at each distinct threshold, in descending score order."""
        ...


@runtime_checkable
class HasSketch(Protocol):
    """Anything carrying a curve sketch, e.g. ``EvaluationResult``."""

    @property
    def sketch(self) -> HasRocPoints:
        """The curve sketch of the window."""
        ...


RocCurve: TypeAlias = tuple[npt.ArrayLike, npt.ArrayLike] | HasRocPoints | HasSketch


def rates(tpr: npt.ArrayLike, fpr: npt.ArrayLike) -> tuple[Float64Array, Float64Array]:
    """Validate true/false positive rates: finite, within [0, 1], same shape."""
    t = np.asarray(tpr, dtype=np.float64)
    f = np.asarray(fpr, dtype=np.float64)
    if t.shape != f.shape:
        raise ValueError(f"tpr has shape {t.shape} but fpr has shape {f.shape}")
    for name, values in (("tpr", t), ("fpr", f)):
        bad = ~np.isfinite(values) | (values < 0.0) | (values > 1.0)
        if bad.any():
            where = np.argwhere(bad)[0].tolist()
            raise ValueError(f"{name} must be finite and within [0, 1]; index {where} is not")
    return t, f


def roc_curve(curve: RocCurve) -> tuple[Float64Array, Float64Array]:
    """Return the validated ``(tpr, fpr)`` of ``curve``, without points where nothing is positive.

    A ``(0, 0)`` point (threshold above every score) has no precision and adds no recall step,
    so it is dropped; what remains must be non-decreasing in both rates (descending score order).
    """
    raw: tuple[npt.ArrayLike, npt.ArrayLike]
    if isinstance(curve, HasSketch):
        raw = curve.sketch.roc_points()
    elif isinstance(curve, HasRocPoints):
        raw = curve.roc_points()
    else:
        raw = curve
    if len(raw) != 2:
        raise ValueError("a ROC curve is a pair (tpr, fpr)")
    tpr, fpr = rates(raw[0], raw[1])
    if tpr.ndim != 1 or tpr.size == 0:
        raise ValueError("a ROC curve needs one or more points as 1-d arrays")
    if np.any(np.diff(tpr) < 0.0) or np.any(np.diff(fpr) < 0.0):
        raise ValueError("ROC points must be in descending score order (tpr, fpr non-decreasing)")
    keep = (tpr > 0.0) | (fpr > 0.0)
    if not keep.any():
        raise ValueError("the ROC curve has no point where anything is predicted positive")
    return tpr[keep], fpr[keep]
