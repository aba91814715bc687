"""Which metric to trust at a fraud rate: the seed paper's sensitivity s(r) of each metric over
the imbalance ratio 1:r, and a metric's surface in contingency space at the model's ratio (its
future work: a model's operating points moving across the surface)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.metrics.sensitivity import (
    SURFACE_METRICS,
    MetricSurface,
    contingency_grid,
    imbalance_sensitivity,
    metric_surface,
)
from app.metrics.types import Float64Array

CALIBRATED_SURFACES = frozenset({"calibrated_precision", "calibrated_f1"})


@dataclass(frozen=True)
class SensitivityCurve:
    """s(r) of one metric at each ratio of ``ratios`` (negatives per positive)."""

    metric: str
    ratios: Float64Array
    sensitivity: Float64Array


def ratio_grid(model_ratio: float, points: int = 25) -> Float64Array:
    """Ratios from 1 (balanced) to at least 10^4, evenly spaced in log r (the paper shows s
    growing with log r), and the model's own ratio exactly."""
    top = max(float(model_ratio), 1e4)
    grid: Float64Array = np.unique(np.append(np.logspace(0.0, np.log10(top), points), model_ratio))
    return grid


def sensitivity_curves(ratios: Float64Array, pi0: float, grid: int = 100) -> list[SensitivityCurve]:
    """Every surface metric's s(r) over ``ratios`` (calibrated ones at ``pi0``)."""
    return [
        SensitivityCurve(
            metric,
            ratios,
            np.array(
                [
                    imbalance_sensitivity(
                        metric, float(r), grid, pi0=pi0 if metric in CALIBRATED_SURFACES else None
                    )
                    for r in ratios
                ]
            ),
        )
        for metric in SURFACE_METRICS
    ]


def surface_at(metric: str, ratio: float, pi0: float, grid: int = 50) -> MetricSurface:
    """``metric``'s surface over a ``grid x grid`` lattice at 1:``ratio`` (rows: TPR, columns:
    TNR, cell centres)."""
    tnr, tpr = contingency_grid(grid)
    return metric_surface(
        metric, ratio, tnr, tpr, pi0=pi0 if metric in CALIBRATED_SURFACES else None
    )
