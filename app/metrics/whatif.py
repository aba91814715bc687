"""A curve sketch's metrics at priors other than its own (Lampert & Gancarski's skew analyses).

A sketch holds the skew-free rates TPR and FPR of every threshold, so its precision-type metrics
can be re-expressed at any fraud rate pi, at no cost beyond one evaluation:

- ``at_prior``: every registry metric as it would measure at pi (eq. 3 at the threshold,
  the step sums for AP and best F1): the kernel's calibrated values at ``pi0 = pi``, so at the
  sketch's own pi they are its regular values bit for bit;
- ``over_range``: over an uncertain range [pi1, pi2], optionally weighted: integrated precision
  at the threshold (eq. 7), the area under the integrated P-R curve with the minimum achievable
  area and the normalised area (eq. 20, 21);
- ``along_trajectory``: along a fraud-rate trajectory pi(t) given as points (temporal
  precision, eq. 4), interpolated linearly or log-linearly ("fraud doubles every month");
  ``trajectory_intervals`` adds their bootstrap intervals.

Undefined values are ``None`` with a reason, as everywhere in the kernel.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from app.metrics._ap_interpolant import ApOfPrior
from app.metrics._quadrature import integrate
from app.metrics._rank_inversion import step_sum
from app.metrics._replicates import Resampled, range_nodes, trajectory_nodes
from app.metrics.budget import NO_BUDGET, Budget
from app.metrics.errors import InvalidInputError
from app.metrics.result import EvaluationResult, evaluate_sketch
from app.metrics.sketch import CurveSketch
from app.metrics.skew import (
    integrated_precision,
    min_integrated_auc,
    normalised_integrated_auc,
    temporal_precision,
)
from app.metrics.types import Float64Array, Interval

Interpolation = Literal["linear", "log"]

NOTHING_FLAGGED = "nothing predicted positive (no score >= threshold): precision is 0/0"


_RANDOM = np.ones(1)
"""A random classifier flags frauds and legitimate rows alike (TPR = FPR): its precision at
fraud rate pi is pi, and its P-R curve the constant pi (Lampert Theorems 5 and 10)."""


def at_prior(sketch: CurveSketch, pi: float, budget: Budget = NO_BUDGET) -> EvaluationResult:
    """Every metric of ``sketch`` as it would measure at fraud rate ``pi`` (in ``.calibrated``),
    under the team's ``budget``."""
    return evaluate_sketch(sketch, pi0=pi, budget=budget)


@dataclass(frozen=True)
class Operating:
    """The sketch's rates at its threshold and along its ROC curve (descending score)."""

    tpr: float
    fpr: float
    curve_tpr: Float64Array
    curve_fpr: Float64Array

    @classmethod
    def of(cls, sketch: CurveSketch) -> Operating:
        """Rates of ``sketch`` (``InvalidInputError`` without both classes)."""
        curve_tpr, curve_fpr = sketch.roc_points()
        j = sketch.threshold_index
        tp = int(sketch.positives_at[: j + 1].sum())
        fp = int(sketch.negatives_between[: j + 1].sum() + sketch.negatives_tied[: j + 1].sum())
        return cls(tp / sketch.positives, fp / sketch.negatives, curve_tpr, curve_fpr)

    @property
    def flags_nothing(self) -> bool:
        """No row at or above the threshold: precision there is 0/0 at every prior."""
        return self.tpr == 0.0 and self.fpr == 0.0

    def area(self, precisions: Float64Array) -> float:
        """sklearn's step sum of per-point precisions over the curve's recall steps."""
        return step_sum(np.diff(self.curve_tpr, prepend=0.0), precisions)


@dataclass(frozen=True)
class RangeAnalysis:
    """Metrics over an uncertain fraud-rate range (Lampert section 4.3)."""

    pi_lo: float
    pi_hi: float
    weighted: bool
    precision: float | None
    """Integrated precision at the threshold (eq. 7); None if nothing is flagged."""
    average_precision: float
    """Area under the integrated P-R curve: the mean of AP(pi) over the range."""
    min_average_precision: float
    """The minimum achievable area over the range (eq. 20)."""
    normalised_average_precision: float | None
    """(area - minimum) / (1 - minimum) (eq. 21); None when the range is [1, 1]."""
    random_average_precision: float
    """A random classifier's area over the range (eq. 22): the (weighted) mean fraud rate."""
    reason: str | None


def _checked(function: Callable[..., Float64Array], *args: object) -> Float64Array:
    """The skew module's ValueErrors (a weight that is 0 on the whole range) as input errors."""
    try:
        return function(*args)
    except InvalidInputError:
        raise
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from exc


def weight_function(
    points: Sequence[tuple[float, float]],
) -> Callable[[Float64Array], npt.ArrayLike]:
    """A weight w(pi) from ``(pi, w)`` points, linear between them and 0 outside them."""
    pis = np.array([p for p, _ in points], dtype=np.float64)
    weights = np.array([w for _, w in points], dtype=np.float64)
    if pis.size < 2 or np.any(np.diff(pis) <= 0.0):
        raise InvalidInputError("weight points need at least two strictly increasing priors")
    if not (np.all(np.isfinite(weights)) and np.all(weights >= 0.0) and weights.max() > 0.0):
        raise InvalidInputError("weights must be finite, non-negative and not all 0")

    def weight(skews: Float64Array) -> Float64Array:
        result: Float64Array = np.interp(skews, pis, weights, left=0.0, right=0.0)
        return result

    return weight


def over_range(
    sketch: CurveSketch,
    pi_lo: float,
    pi_hi: float,
    weight: Sequence[tuple[float, float]] | None = None,
) -> RangeAnalysis:
    """Integrated precision and P-R area over [pi_lo, pi_hi] (Lampert eq. 7, 20, 21).

    With ``weight`` (``(pi, w)`` points, see :func:`weight_function`) every mean over the
    range is weighted by w(pi); the minimum area (eq. 20) is the unweighted one, as in the paper.
    """
    if not (0.0 <= pi_lo <= pi_hi <= 1.0):
        raise InvalidInputError(f"need 0 <= pi_lo <= pi_hi <= 1, got [{pi_lo}, {pi_hi}]")
    w = weight_function(weight) if weight is not None else None
    rates = Operating.of(sketch)
    # A point with TPR = FPR = 0 (only possible before the first positive) adds no recall.
    precision: float | None = None
    reason: str | None = None
    if rates.flags_nothing:
        reason = NOTHING_FLAGGED
    else:
        precision = float(_checked(integrated_precision, rates.tpr, rates.fpr, pi_lo, pi_hi, w))
    curve = _checked(integrated_precision, rates.curve_tpr, rates.curve_fpr, pi_lo, pi_hi, w)
    area = rates.area(curve)
    minimum = min_integrated_auc(pi_lo, pi_hi)
    normalised = normalised_integrated_auc(area, pi_lo, pi_hi) if minimum < 1.0 else None
    if normalised is None:
        reason = reason or "the range [1, 1] leaves no achievable area to normalise by"
    random = float(_checked(integrated_precision, _RANDOM, _RANDOM, pi_lo, pi_hi, w)[0])
    return RangeAnalysis(
        pi_lo, pi_hi, w is not None, precision, area, minimum, normalised, random, reason
    )


def range_intervals(
    sketch: CurveSketch,
    analysis: RangeAnalysis,
    weight: Sequence[tuple[float, float]] | None = None,
    *,
    seed: int = 0,
    replicates: int = 1000,
    level: float = 0.95,
) -> tuple[Interval | None, Interval | None]:
    """Bootstrap intervals of ``analysis``'s integrated precision and P-R area.

    Each replicate's means over the range are taken on 8 Gauss-Legendre nodes (weighted by
    ``weight`` when given); the percentiles are shifted by exact minus merged-quadrature value
    (:mod:`app.metrics._replicates`), so the centres are ``analysis``'s exact values. None where
    the value is undefined, or the weight vanishes at every node.
    """
    w = weight_function(weight) if weight is not None else None
    quadrature = range_nodes(analysis.pi_lo, analysis.pi_hi, w)
    if quadrature is None or not (quadrature[0][0] > 0.0 and quadrature[0][-1] < 1.0):
        return None, None
    resampled = Resampled(sketch, np.random.default_rng(seed), replicates)
    centres = {
        "precision": analysis.precision,
        "average_precision": analysis.average_precision,
    }
    out = resampled.mean_intervals(*quadrature, centres, level)
    return out["precision"], out["average_precision"]


@dataclass(frozen=True)
class TrajectoryAnalysis:
    """Mean metrics along a known fraud-rate trajectory (Lampert eq. 4)."""

    t_start: float
    t_end: float
    interpolation: Interpolation
    precision: float | None
    """Temporal precision at the threshold; None if nothing is flagged."""
    average_precision: float
    """The mean over time of AP(pi(t)) (temporal precision of every curve point, step sum)."""
    random_average_precision: float
    """A random classifier's temporal AP (eq. 15): the mean of pi(t) over the time span."""
    reason: str | None


def trajectory_function(
    points: Sequence[tuple[float, float]], interpolation: Interpolation
) -> Callable[[Float64Array], Float64Array]:
    """pi(t) from ``(t, pi)`` points with strictly increasing t: linear in pi or in log pi."""
    times = np.array([t for t, _ in points], dtype=np.float64)
    pis = np.array([p for _, p in points], dtype=np.float64)
    if times.size < 2 or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0.0):
        raise InvalidInputError("a trajectory needs at least two points with increasing times")
    if not np.all((pis >= 0.0) & (pis <= 1.0)):
        raise InvalidInputError("trajectory priors must lie in [0, 1]")
    if interpolation == "log":
        if np.any(pis <= 0.0):
            raise InvalidInputError("log interpolation needs every trajectory prior above 0")
        logs = np.log(pis)

        def log_linear(t: Float64Array) -> Float64Array:
            # exp of a mean of logs can round a hair past 1 between two points at 1.
            result: Float64Array = np.minimum(np.exp(np.interp(t, times, logs)), 1.0)
            return result

        return log_linear

    def linear(t: Float64Array) -> Float64Array:
        result: Float64Array = np.interp(t, times, pis)
        return result

    return linear


def along_trajectory(
    sketch: CurveSketch,
    points: Sequence[tuple[float, float]],
    interpolation: Interpolation = "linear",
) -> TrajectoryAnalysis:
    """Temporal precision (Lampert eq. 4) and temporal AP over the trajectory's time span."""
    pi_of_t = trajectory_function(points, interpolation)
    t_start, t_end = float(points[0][0]), float(points[-1][0])

    def shifted(t: Float64Array) -> Float64Array:
        return pi_of_t(t + t_start)

    rates = Operating.of(sketch)
    horizon = t_end - t_start
    precision: float | None = None
    reason: str | None = None
    if rates.flags_nothing:
        reason = NOTHING_FLAGGED
    else:
        precision = float(temporal_precision(rates.tpr, rates.fpr, shifted, horizon))
    random = float(temporal_precision(_RANDOM, _RANDOM, shifted, horizon)[0])
    return TrajectoryAnalysis(
        t_start,
        t_end,
        interpolation,
        precision,
        _temporal_ap(rates, points, pi_of_t),
        random,
        reason,
    )


def _temporal_ap(
    rates: Operating,
    points: Sequence[tuple[float, float]],
    pi_of_t: Callable[[Float64Array], Float64Array],
) -> float:
    """(1/T) integral of AP(pi(t)) dt: equal to the step sum of every curve point's temporal
    precision (the integral is linear), but the integrand is one interpolated function of pi
    (:class:`ApOfPrior`), and each stretch between two trajectory points (where pi(t) is smooth)
    is integrated on its own."""
    pis = np.array([p for _, p in points], dtype=np.float64)
    with np.errstate(divide="ignore"):  # pi = 0 or 1: a logit of -inf or +inf, as meant
        logits = np.log(pis) - np.log1p(-pis)
    # pi(t) is monotone between points, so the points hold its extremes.
    ap = ApOfPrior(rates.curve_tpr, rates.curve_fpr, float(logits.min()), float(logits.max()))

    def integrand(t: Float64Array) -> Float64Array:
        return ap(pi_of_t(t))[:, None]

    times = [float(t) for t, _ in points]
    total = sum(float(integrate(integrand, a, b)[0]) for a, b in itertools.pairwise(times))
    return total / (times[-1] - times[0])


def trajectory_intervals(
    sketch: CurveSketch,
    analysis: TrajectoryAnalysis,
    points: Sequence[tuple[float, float]],
    *,
    seed: int = 0,
    replicates: int = 1000,
    level: float = 0.95,
) -> tuple[Interval | None, Interval | None]:
    """Bootstrap intervals of ``analysis``'s temporal precision and temporal AP.

    Each replicate's means over time are taken on the 16 priors of
    :func:`app.metrics._replicates.trajectory_nodes`; the percentiles are shifted by exact minus
    merged value, so the centres are ``analysis``'s exact values. None where the value is
    undefined.
    """
    pi_of_t = trajectory_function(points, analysis.interpolation)
    times = np.array([t for t, _ in points], dtype=np.float64)
    resampled = Resampled(sketch, np.random.default_rng(seed), replicates)
    centres = {
        "precision": analysis.precision,
        "average_precision": analysis.average_precision,
    }
    out = resampled.mean_intervals(*trajectory_nodes(times, pi_of_t), centres, level)
    return out["precision"], out["average_precision"]
