"""The calibrated metrics kernel: pure numpy, imports nothing else from ``app``.

See docs/interfaces.md section 1 for the contract the rest of calmon builds against.
"""

from app.metrics.bootstrap import Intervals, bootstrap
from app.metrics.curves import PRCurve, pr_curve
from app.metrics.drift import (
    VERDICTS,
    Decomposition,
    MetricChange,
    WindowEstimate,
    decompose,
    pool_baseline,
)
from app.metrics.errors import InvalidInputError
from app.metrics.registry import METRIC_NAMES, METRICS, METRICS_BY_NAME, MetricSpec, metric_spec
from app.metrics.result import EvaluationResult, evaluate, evaluate_sketch, evaluate_sketches
from app.metrics.sketch import CurveSketch, build_sketch

__all__ = [
    "METRICS",
    "METRICS_BY_NAME",
    "METRIC_NAMES",
    "VERDICTS",
    "CurveSketch",
    "Decomposition",
    "EvaluationResult",
    "Intervals",
    "InvalidInputError",
    "MetricChange",
    "MetricSpec",
    "PRCurve",
    "WindowEstimate",
    "bootstrap",
    "build_sketch",
    "decompose",
    "evaluate",
    "evaluate_sketch",
    "evaluate_sketches",
    "metric_spec",
    "pool_baseline",
    "pr_curve",
]
