"""Precision under other, moving or uncertain skews (Lampert & Gancarski 2014, "The bane of skew").

Skew is the positive ratio pi. Every function here works from the skew-free rates TPR and FPR,
where precision at skew pi' is (their eq. 9, Siblini's calibrated precision with pi0 = pi')

    P_pi'(TPR, FPR) = pi' TPR / (pi' TPR + (1 - pi') FPR).

- eq. (3)  ``transform_precision``: a precision measured at pi, re-expressed at pi';
- eq. (4)  ``temporal_precision``: its mean over a known skew trajectory pi'(t), t in [0, T];
- eq. (7)  ``integrated_precision``: its mean over an uncertain range [pi1', pi2'], optionally
  weighted; ``integrated_pr_curve`` / ``integrated_auc_pr`` apply it along a ROC curve;
- eq. (20) ``min_integrated_auc`` and eq. (21) ``normalised_integrated_auc``;
- section 5.1 ``skew_range_from_history``: the range as mean +- 3 std of observed skews;
- Algorithm 1 ``rank_inversion_skews``: where two models' AUC-PR order flips.

Where precision is 0/0 (a point with TPR = FPR = 0 predicts nothing) a ``ValueError`` is raised;
at the skew ends pi' = 0 or 1 the continuous extension in pi' is used (1 if TPR > 0 and FPR = 0).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy.special import spence

from app.metrics._quadrature import integrate
from app.metrics._rank_inversion import average_precision_at_skew, rank_inversion_skews, step_sum
from app.metrics._roc_input import RocCurve, rates, roc_curve
from app.metrics.types import Float64Array

__all__ = [
    "average_precision_at_skew",
    "integrated_auc_pr",
    "integrated_pr_curve",
    "integrated_precision",
    "min_integrated_auc",
    "normalised_integrated_auc",
    "precision_at_skew",
    "rank_inversion_skews",
    "skew_range_from_history",
    "temporal_precision",
    "transform_precision",
]

SkewFunction = Callable[[Float64Array], npt.ArrayLike]


def _skew(value: float, name: str, *, closed: bool) -> float:
    """Validate a skew: within [0, 1] if ``closed`` else within (0, 1)."""
    pi = float(value)
    ok = 0.0 <= pi <= 1.0 if closed else 0.0 < pi < 1.0
    if not (np.isfinite(pi) and ok):
        interval = "[0, 1]" if closed else "(0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return pi


def _defined_rates(tpr: npt.ArrayLike, fpr: npt.ArrayLike) -> tuple[Float64Array, Float64Array]:
    t, f = rates(tpr, fpr)
    empty = (t == 0.0) & (f == 0.0)
    if empty.any():
        where = np.argwhere(empty)[0].tolist()
        raise ValueError(f"precision is undefined where tpr = fpr = 0 (index {where})")
    return t, f


def transform_precision(
    precision: npt.ArrayLike, pi: float, pi_new: float
) -> npt.NDArray[np.float64]:
    """Re-express a precision measured at skew ``pi`` at skew ``pi_new`` (Lampert eq. 3).

    ``P' = pi' / (pi' + (1 - pi') * pi / (1 - pi) * (1/P - 1))``, computed after multiplying
    through by ``P (1 - pi)`` so that ``P = 0`` maps to 0 without a division by zero.

    Parameters
    ----------
    precision : array_like
        Precision(s) in [0, 1] measured on data whose positive ratio is ``pi``.
    pi, pi_new : float
        Source and target skews, each in the open interval (0, 1).

    Returns
    -------
    ndarray
        Precision(s) at ``pi_new``, same shape as ``precision``.

    Examples
    --------
    A precision of 0.5 on balanced data is no better than chance: at a skew of 0.1 it is 0.1.
    Precision 2/3 at 0.5 (TP = 2, FP = 1 on two frauds and two legitimate rows) re-expressed at
    0.1 is Siblini et al.'s calibrated precision of the same counts, 2 / (2 + 9):

    >>> transform_precision([0.5, 1.0, 0.0], pi=0.5, pi_new=0.1).tolist()
    [0.1, 1.0, 0.0]
    >>> round(float(transform_precision(2 / 3, pi=0.5, pi_new=0.1)), 4)
    0.1818
    """
    p = np.asarray(precision, dtype=np.float64)
    if not np.all(np.isfinite(p)) or np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("precision must be finite and within [0, 1]")
    source = _skew(pi, "pi", closed=False)
    target = _skew(pi_new, "pi_new", closed=False)
    kept = target * p * (1.0 - source)
    result: Float64Array = kept / (kept + (1.0 - target) * source * (1.0 - p))
    return result


def precision_at_skew(
    tpr: npt.ArrayLike, fpr: npt.ArrayLike, pi: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """Precision of rates ``(tpr, fpr)`` on data with positive ratio ``pi`` (Lampert eq. 9).

    Broadcasts ``tpr``/``fpr`` against ``pi``. Uses the continuous extension at the ends:
    with FPR = 0 precision is 1 for every pi (including 0), with TPR = 0 it is 0.

    >>> precision_at_skew(1.0, 0.5, [0.5, 0.1]).round(4).tolist()
    [0.6667, 0.1818]
    >>> precision_at_skew([0.5, 0.0], [0.0, 0.5], 0.0).tolist()
    [1.0, 0.0]
    """
    t, f = _defined_rates(tpr, fpr)
    skew = np.asarray(pi, dtype=np.float64)
    if not np.all(np.isfinite(skew)) or np.any((skew < 0.0) | (skew > 1.0)):
        raise ValueError("skew values must lie in [0, 1]")
    numerator = skew * t
    denominator = numerator + (1.0 - skew) * f
    limit = np.broadcast_to(np.where(t > 0.0, 1.0, 0.0), denominator.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: Float64Array = np.where(denominator > 0.0, numerator / denominator, limit)
    return result


def temporal_precision(
    tpr: npt.ArrayLike, fpr: npt.ArrayLike, pi_of_t: SkewFunction, t_end: float
) -> npt.NDArray[np.float64]:
    """Mean precision over a known skew trajectory ``pi'(t)``, t in [0, T] (Lampert eq. 4).

    ``(1/T) * integral_0^T P_{pi'(t)} dt`` by adaptive Gauss-Kronrod quadrature to about 1e-13,
    so kinks (a skew capped at 1) and fast growth are resolved, not sampled on a unit grid.

    Parameters
    ----------
    tpr, fpr : array_like
        Rates of one operating point or of many (same shape).
    pi_of_t : callable
        Vectorised skew trajectory: maps an array of times to skews in [0, 1] of the same shape
        (write caps with ``np.minimum``, not ``min``).
    t_end : float
        The horizon T > 0.

    Returns
    -------
    ndarray
        Temporal precision per operating point, shape of ``tpr``.
    """
    t, f = _defined_rates(tpr, fpr)
    horizon = float(t_end)
    if not (np.isfinite(horizon) and horizon > 0.0):
        raise ValueError(f"t_end must be a positive finite time, got {t_end!r}")
    flat_t, flat_f = t.ravel(), f.ravel()

    def integrand(times: Float64Array) -> Float64Array:
        skews = np.asarray(pi_of_t(times), dtype=np.float64)
        if skews.shape != times.shape:
            raise ValueError("pi_of_t must map an array of times to an array of the same shape")
        return precision_at_skew(flat_t[None, :], flat_f[None, :], skews[:, None])

    total = integrate(integrand, 0.0, horizon)
    result: Float64Array = (total / horizon).reshape(t.shape)
    return result


def _uniform_integrated_precision(
    t: Float64Array, f: Float64Array, pi_lo: float, pi_hi: float
) -> Float64Array:
    """Closed form of eq. (7): mean of P_pi over [pi_lo, pi_hi], stable for any rates.

    With c = TPR - FPR, w = pi_hi - pi_lo, D = TPR pi_lo + FPR (1 - pi_lo) and u = c w / D,
    the mean is TPR pi_lo / D + TPR (FPR / D) (1 - ln(1 + u) / u) / c. Near u = 0 (TPR close to
    FPR) that cancels, so there it is written with h(u) = (u - ln(1 + u)) / u^2 and h's series:
    TPR pi_lo / D + (TPR / D) (FPR / D) w h(u). Both forms avoid overflow for rates near 0.
    """
    width = pi_hi - pi_lo
    denominator = t * pi_lo + f * (1.0 - pi_lo)
    safe = np.where(denominator > 0.0, denominator, 1.0)
    gap = t - f
    u = gap * width / safe
    small = np.abs(u) < 0.1
    fpr_share = f / safe
    fixed_part = t * pi_lo / safe
    # The series only where it is used (large u never reaches it, which keeps it finite),
    # sum_{n<20} (-u)^n / (n + 2) by Horner's rule: over a narrow range most of a pooled curve's
    # tens of thousands of points have a small u, and 20 powers each cost more than the rest.
    h = np.zeros_like(u)
    minus_u = -u[small]
    series = np.full_like(minus_u, 1.0 / 21.0)
    for n in range(18, -1, -1):
        series = series * minus_u + 1.0 / (n + 2.0)
    h[small] = series
    near = fixed_part + (t / safe) * fpr_share * width * h
    # u = -1 only when TPR = 0 (result 0 below); 1 stands in to keep the logarithm finite.
    large_u = np.where(small | (u <= -1.0), 1.0, u)
    far = fixed_part + t * fpr_share * (1.0 - np.log1p(large_u) / large_u) / np.where(
        small, 1.0, gap
    )
    value = np.where(small, near, far)
    # FPR = 0 with pi_lo = 0 gives D = 0: precision is 1 on all of (0, pi_hi]. TPR = 0 gives 0.
    value = np.where(denominator > 0.0, value, 1.0)
    result: Float64Array = np.where(t > 0.0, value, 0.0)
    return result


def integrated_precision(
    tpr: npt.ArrayLike,
    fpr: npt.ArrayLike,
    pi_lo: float,
    pi_hi: float,
    weight: SkewFunction | None = None,
) -> npt.NDArray[np.float64]:
    """Precision averaged over an uncertain skew range [pi1', pi2'] (Lampert eq. 7).

    Unweighted: ``1/(pi2' - pi1') * integral P_pi' dpi'`` in closed form. Weighted:
    ``integral w P_pi' dpi' / integral w dpi'`` by adaptive quadrature; dividing by the weight's
    own integral makes any non-negative ``w`` usable (Lampert's text asks for a w integrating to 1
    and still divides by the width, which would not stay in [0, 1]).
    With ``pi_lo == pi_hi`` the mean collapses to the precision at that skew.

    Parameters
    ----------
    tpr, fpr : array_like
        Rates of one or many operating points (same shape), not both 0 at any point.
    pi_lo, pi_hi : float
        Skew range, ``0 <= pi_lo <= pi_hi <= 1``.
    weight : callable, optional
        Vectorised non-negative weight w(pi') with a positive integral over the range.

    Returns
    -------
    ndarray
        Integrated precision per operating point, shape of ``tpr``.
    """
    t, f = _defined_rates(tpr, fpr)
    lo = _skew(pi_lo, "pi_lo", closed=True)
    hi = _skew(pi_hi, "pi_hi", closed=True)
    if lo > hi:
        raise ValueError(f"pi_lo ({lo}) must not exceed pi_hi ({hi})")
    if lo == hi:
        return precision_at_skew(t, f, lo)
    if weight is None:
        return _uniform_integrated_precision(t, f, lo, hi)
    flat_t, flat_f = t.ravel(), f.ravel()

    def integrand(skews: Float64Array) -> Float64Array:
        w = np.asarray(weight(skews), dtype=np.float64)
        if w.shape != skews.shape or not np.all(np.isfinite(w)) or np.any(w < 0.0):
            raise ValueError("weight must map skews to finite non-negative values, same shape")
        precision = precision_at_skew(flat_t[None, :], flat_f[None, :], skews[:, None])
        return np.concatenate([w[:, None] * precision, w[:, None]], axis=1)

    totals = integrate(integrand, lo, hi)
    if not totals[-1] > 0.0:
        raise ValueError("the weight integrates to 0 over the skew range")
    result: Float64Array = (totals[:-1] / totals[-1]).reshape(t.shape)
    return result


def integrated_pr_curve(
    curve: RocCurve, pi_lo: float, pi_hi: float, weight: SkewFunction | None = None
) -> tuple[Float64Array, Float64Array]:
    """The integrated P-R curve (Lampert section 4.3.2): ``(recall, integrated precision)``.

    ``curve`` is ``(tpr, fpr)`` in descending score order, or an object with ``roc_points()``
    or ``.sketch.roc_points()``. A leading ``(0, 0)`` point is dropped (no precision there).
    """
    tpr, fpr = roc_curve(curve)
    return tpr, integrated_precision(tpr, fpr, pi_lo, pi_hi, weight)


def integrated_auc_pr(
    curve: RocCurve, pi_lo: float, pi_hi: float, weight: SkewFunction | None = None
) -> float:
    """Area under the integrated P-R curve over a skew range (Lampert AUC-P-bar-R).

    The area is the step sum ``sum_i (R_i - R_{i-1}) * P-bar_i``, the same rule as average
    precision, rather than Lampert's trapezoid (eq. 18): integrated precision is linear in
    P_pi', so this area equals the mean over the skew range of the average precision at each
    skew, i.e. of ``average_precision_at_skew(curve, pi')``.
    """
    recall, precision = integrated_pr_curve(curve, pi_lo, pi_hi, weight)
    steps = np.diff(recall, prepend=0.0)
    return step_sum(steps, precision)


def min_integrated_auc(pi_lo: float, pi_hi: float) -> float:
    """Minimum achievable area under an integrated P-R curve (Lampert eq. 20).

    ``gamma [2 (pi2 - pi1) - (1 - pi1) ln(1 - pi1) + (1 - pi2) ln(1 - pi2) + Li2(pi1) - Li2(pi2)]``
    with ``gamma = 1 / (pi2 - pi1)``: the area under the worst achievable curve
    ``R -> mean_pi' P_pi'(TPR = R, FPR = 1)``. ``(1 - pi) ln(1 - pi)`` is taken as 0 at pi = 1.
    For ``pi_lo == pi_hi`` the limit, the unachievable area at one skew, is returned.
    """
    lo = _skew(pi_lo, "pi_lo", closed=True)
    hi = _skew(pi_hi, "pi_hi", closed=True)
    if lo > hi:
        raise ValueError(f"pi_lo ({lo}) must not exceed pi_hi ({hi})")

    def antiderivative(pi: float) -> float:
        tail = (1.0 - pi) * np.log1p(-pi) if pi < 1.0 else 0.0
        # scipy's spence(z) is Li2(1 - z), so the dilogarithm Li2(pi) is spence(1 - pi).
        return 2.0 * pi + tail - float(spence(1.0 - pi))

    if lo == hi:
        # d/dpi of the antiderivative: 1 + (1 - pi) ln(1 - pi) / pi (Boyd et al.'s minimum area).
        if lo == 0.0:
            return 0.0
        return 1.0 + (((1.0 - lo) * np.log1p(-lo) / lo) if lo < 1.0 else 0.0)
    return (antiderivative(hi) - antiderivative(lo)) / (hi - lo)


def normalised_integrated_auc(auc: float, pi_lo: float, pi_hi: float) -> float:
    """Area normalised by the unachievable region (Lampert eq. 21, after Boyd et al. 2012).

    ``(AUC - AUC_min) / (1 - AUC_min)``: 0 for the worst achievable curve, 1 for a perfect one.
    """
    minimum = min_integrated_auc(pi_lo, pi_hi)
    if minimum >= 1.0:
        raise ValueError("the skew range leaves no achievable area (pi_lo = pi_hi = 1)")
    return (float(auc) - minimum) / (1.0 - minimum)


def skew_range_from_history(pis: npt.ArrayLike) -> tuple[float, float]:
    """Skew range as mean +- 3 standard deviations of observed skews (Lampert section 5.1).

    Lampert does not say which standard deviation; the population one (ddof = 0) is used, being
    the closer to their printed 0.035 for Table 4's seven eye-fundus skews (0.036; the sample
    one gives 0.039). The bounds are clipped to [0, 1]: Lampert requires 0 <= pi1' < pi2' < 1,
    and the integrals here stay finite at both closed ends, so clipping to the ends is exact.
    """
    values = np.asarray(pis, dtype=np.float64).ravel()
    if values.size < 2:
        raise ValueError("need at least two observed skews to estimate their spread")
    if not np.all(np.isfinite(values)) or np.any((values < 0.0) | (values > 1.0)):
        raise ValueError("observed skews must be finite and within [0, 1]")
    mean = float(values.mean())
    spread = 3.0 * float(values.std(ddof=0))
    return max(0.0, mean - spread), min(1.0, mean + spread)
