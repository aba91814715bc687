"""The calibrated metrics kernel: pure numpy (and scipy.special), imports nothing else from ``app``.

See docs/interfaces.md section 1 for the contract the rest of calmon builds against.
"""

from app.metrics.bootstrap import Intervals, bootstrap
from app.metrics.budget import NO_BUDGET, Budget, budget_share
from app.metrics.curves import PRCurve, pr_curve
from app.metrics.drift import Decomposition, Effects, decompose
from app.metrics.errors import InvalidInputError
from app.metrics.misfit import Fit
from app.metrics.mixture import ClassHistogram, ScoreHistogram, bin_edges
from app.metrics.nowcast import EXPECTED_METRICS, Nowcast, nowcast_window, pooled_fit
from app.metrics.null_model import NullModel
from app.metrics.pooling import pool_sketches
from app.metrics.registry import METRIC_NAMES, METRICS, METRICS_BY_NAME, MetricSpec, metric_spec
from app.metrics.result import EvaluationResult, evaluate, evaluate_sketch, evaluate_sketches
from app.metrics.sketch import CurveSketch
from app.metrics.sketch_amounts import SketchAmounts
from app.metrics.sketch_build import build_sketch

__all__ = [
    "EXPECTED_METRICS",
    "METRICS",
    "METRICS_BY_NAME",
    "METRIC_NAMES",
    "NO_BUDGET",
    "Budget",
    "ClassHistogram",
    "CurveSketch",
    "Decomposition",
    "Effects",
    "EvaluationResult",
    "Fit",
    "Intervals",
    "InvalidInputError",
    "MetricSpec",
    "Nowcast",
    "NullModel",
    "PRCurve",
    "ScoreHistogram",
    "SketchAmounts",
    "bin_edges",
    "bootstrap",
    "budget_share",
    "build_sketch",
    "decompose",
    "evaluate",
    "evaluate_sketch",
    "evaluate_sketches",
    "metric_spec",
    "nowcast_window",
    "pool_sketches",
    "pooled_fit",
    "pr_curve",
]
