"""Skews at which two models' AUC-PR order flips (Lampert & Gancarski 2014, Algorithm 1).

Average precision at skew pi from ROC points (sklearn's step sum, re-expressed at pi) is

    AP(pi) = sum_i dTPR_i * pi TPR_i / (pi TPR_i + (1 - pi) FPR_i)
           = sum_i dTPR_i * sigmoid(logit(pi) - ln(FPR_i / TPR_i)),

a sum of unit-width logistic steps in x = logit(pi). The difference of two models is therefore
smooth on the logit axis and flat (of constant sign) more than a few dozen units beyond its
outermost step, so a scan at a fixed logit spacing over that span brackets every sign change that
is not a pair of crossings closer than the spacing (a near-tangency), and Algorithm 1's bisection
then refines each bracket. Bisecting on the logit axis keeps the relative accuracy of pi* (and of
1 - pi*) uniform, also for fraud-like skews of 1e-4.
"""

from __future__ import annotations

import itertools

import numpy as np

from app.metrics._roc_input import FloatArray, RocCurve, roc_curve

# Beyond 40 logit units past the outermost step, every step is within e^-40 of its asymptote.
_TAIL_MARGIN = 40.0
_CHUNK = 512


def _sigmoid(z: FloatArray) -> FloatArray:
    """Logistic function with full relative precision in both tails (also at +-inf)."""
    e = np.exp(-np.abs(z))
    result: FloatArray = np.where(z >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))
    return result


class _StepSum:
    """AP(x) of one curve as weights and step locations on the logit axis."""

    def __init__(self, curve: RocCurve) -> None:
        tpr, fpr = roc_curve(curve)
        steps = np.diff(tpr, prepend=0.0)
        keep = steps > 0.0
        # A step with FPR = 0 is complete at every skew: it is a constant, summed on its own so
        # that equal constants of the two models cancel exactly instead of drowning the tail.
        perfect = fpr[keep] == 0.0
        self.constant = float(steps[keep][perfect].sum())
        self.weights = steps[keep][~perfect]
        self.locations = np.log(fpr[keep][~perfect]) - np.log(tpr[keep][~perfect])
        # The weights sum to the last TPR mathematically; use that exact value for the tail form.
        self.total = float(tpr[-1])


def _difference(a: _StepSum, b: _StepSum, x: FloatArray, pivot: float) -> FloatArray:
    """AP_a(x) - AP_b(x), summed in the form that is exact in the relevant tail.

    Left of ``pivot`` the steps are summed directly (tiny values keep their relative precision);
    right of it as ``total - sum w * sigmoid(c - x)`` so that 1 - AP keeps it there.
    """
    weights = np.concatenate([a.weights, -b.weights])
    locations = np.concatenate([a.locations, b.locations])
    out = np.empty_like(x)
    left = x <= pivot
    for side, offset, sign in (
        (left, a.constant - b.constant, 1.0),
        (~left, a.total - b.total, -1.0),
    ):
        points = x[side]
        values = np.empty_like(points)
        for start in range(0, points.size, _CHUNK):
            z = points[start : start + _CHUNK, None] - locations[None, :]
            values[start : start + _CHUNK] = offset + sign * (_sigmoid(sign * z) @ weights)
        out[side] = values
    return out


def average_precision_at_skew(curve: RocCurve, pi: float) -> float:
    """Average precision of a ROC curve re-expressed at skew ``pi`` in (0, 1).

    ``sum_i (TPR_i - TPR_{i-1}) * pi TPR_i / (pi TPR_i + (1 - pi) FPR_i)``: sklearn's step sum
    with precision at skew pi, i.e. the calibrated average precision at ``pi0 = pi``.
    ``curve`` is ``(tpr, fpr)`` in descending score order or has ``roc_points()``/``.sketch``.
    """
    skew = float(pi)
    if not (np.isfinite(skew) and 0.0 < skew < 1.0):
        raise ValueError(f"pi must lie in (0, 1), got {pi!r}")
    tpr, fpr = roc_curve(curve)
    steps = np.diff(tpr, prepend=0.0)
    keep = steps > 0.0
    t, f = tpr[keep], fpr[keep]
    precision = skew * t / (skew * t + (1.0 - skew) * f)
    return float(np.dot(steps[keep], precision))


def rank_inversion_skews(
    a: RocCurve, b: RocCurve, *, scan_step: float = 0.01, tolerance: float = 1e-11
) -> FloatArray:
    """Every skew pi* in (0, 1) at which the AUC-PR order of two models flips.

    Parameters
    ----------
    a, b : RocCurve
        ``(tpr, fpr)`` arrays in descending score order, or objects with ``roc_points()``
        (a curve sketch) or ``.sketch.roc_points()`` (an evaluation result).
    scan_step : float
        Scan spacing on the logit(pi) axis. Two crossings closer than this (a near-tangency,
        where the order barely changes) may be missed; every isolated crossing is found.
    tolerance : float
        Bisection stops when the bracket is this narrow in logit(pi): pi* then has a relative
        error of about ``tolerance`` (and 1 - pi* too).

    Returns
    -------
    ndarray
        The flip skews in increasing order; empty if one model leads (or ties) at every skew.
        A skew where the difference is exactly 0 between opposite signs is returned as is.
    """
    if not (scan_step > 0.0 and tolerance > 0.0):
        raise ValueError("scan_step and tolerance must be positive")
    first, second = _StepSum(a), _StepSum(b)
    locations = np.concatenate([first.locations, second.locations])
    low, high = (locations.min(), locations.max()) if locations.size else (0.0, 0.0)
    pivot = 0.5 * (low + high)
    count = int(np.ceil((high - low + 2.0 * _TAIL_MARGIN) / scan_step)) + 1
    grid = np.linspace(low - _TAIL_MARGIN, high + _TAIL_MARGIN, count)
    signs = np.sign(_difference(first, second, grid, pivot))

    nonzero = np.flatnonzero(signs)
    roots: list[float] = []
    lows: list[float] = []
    highs: list[float] = []
    for i, j in itertools.pairwise(nonzero):
        if signs[i] == signs[j]:
            continue
        if j == i + 1:
            lows.append(grid[i])
            highs.append(grid[j])
        else:  # exact zeros between opposite signs: the flip is in the middle of that run
            roots.append(float(grid[(i + j + 1) // 2]))
    if lows:
        brackets = (np.array(lows), np.array(highs))
        roots.extend(_bisect(first, second, brackets, pivot=pivot, tolerance=tolerance))
    result: FloatArray = np.sort(_sigmoid(np.array(roots, dtype=np.float64)))
    return result


def _bisect(
    a: _StepSum,
    b: _StepSum,
    brackets: tuple[FloatArray, FloatArray],
    *,
    pivot: float,
    tolerance: float,
) -> list[float]:
    """Algorithm 1's bisection, run on all brackets at once (in logit(pi))."""
    lows, highs = brackets
    low_sign = np.sign(_difference(a, b, lows, pivot))
    found = np.full(lows.shape, np.nan)
    # 200 halvings shrink any bracket below one ulp, so the cap only stops a tolerance
    # smaller than float resolution from looping forever.
    for _ in range(200):
        open_ = np.isnan(found)
        if not open_.any():
            break
        mids = 0.5 * (lows + highs)
        narrow = open_ & (highs - lows <= tolerance)
        found[narrow] = mids[narrow]
        mid_sign = np.sign(_difference(a, b, mids, pivot))
        exact = open_ & ~narrow & (mid_sign == 0.0)
        found[exact] = mids[exact]
        go_up = mid_sign == low_sign
        lows = np.where(go_up, mids, lows)
        highs = np.where(go_up, highs, mids)
    found = np.where(np.isnan(found), 0.5 * (lows + highs), found)
    return [float(v) for v in found]
