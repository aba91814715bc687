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

Pooled curves of a year of windows hold tens of thousands of steps, and the exact scan costs
(steps x scan points) logistic evaluations: seconds. Past ``fast_above`` such evaluations the scan
is a convolution instead: every step's weight is split between the two nearest nodes of a fine
uniform grid (spacing ``_FAST_SPACING`` = 0.002 in logit(pi); the split keeps each step's weight
and location, so the sum moves by at most ``sum |w| * max|sigmoid''| * h^2 / 8 < 1e-7``), and
the sum of logistic steps over the grid is one FFT convolution with the sampled logistic. The
scan's brackets are then checked with the exact difference (a bracket whose exact ends do not
change sign is dropped) and refined by the exact bisection, so every flip it returns is exact to
the tolerance; what it can miss is a flip where the AP difference stays within that error bound
(about 1e-7) on one side of it: a tie in all but name.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from app.metrics._roc_input import RocCurve, roc_curve
from app.metrics.types import Float64Array

# Beyond 40 logit units past the outermost step, every step is within e^-40 of its asymptote.
_TAIL_MARGIN = 40.0
_CHUNK = 512
_FAST_SPACING = 0.002
_MAX_SIGMOID_CURVATURE = 1.0 / (6.0 * np.sqrt(3.0))  # max |sigmoid''(z)|
_ROUNDING = 1e-12  # per unit of step weight: far above a sum's rounding, far below any real gap
FAST_ABOVE = 2_000_000
"""Steps x scan points above which the scan is the convolution (see the module docstring)."""


def step_sum(weights: Float64Array, values: Float64Array) -> float:
    """``sum weights * values`` without BLAS.

    ``np.dot`` and ``@`` hand these to OpenBLAS, which splits a sum of a few thousand terms over
    its threads: on a busy machine waiting for a descheduled thread took 40 ms for a 23,000-term
    sum that takes 3 us on one (measured on the 2-core CI host under load), most of an analysis
    request. einsum's own loops stay on the calling thread.
    """
    return float(np.einsum("i,i->", weights, values))


def matrix_times(matrix: Float64Array, vector: Float64Array) -> Float64Array:
    """``matrix @ vector`` without BLAS (see :func:`step_sum`)."""
    result: Float64Array = np.einsum("ij,j->i", matrix, vector)
    return result


def _sigmoid(z: Float64Array) -> Float64Array:
    """Logistic function with full relative precision in both tails (also at +-inf)."""
    e = np.exp(-np.abs(z))
    result: Float64Array = np.where(z >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))
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


def _difference(a: _StepSum, b: _StepSum, x: Float64Array, pivot: float) -> Float64Array:
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
            steps = matrix_times(_sigmoid(sign * z), weights)
            values[start : start + _CHUNK] = offset + sign * steps
        out[side] = values
    return out


@dataclass(frozen=True)
class _Difference:
    """AP_a(x) - AP_b(x) of two curves summed around one pivot, and its slope: what the root
    finders evaluate, again and again, at their brackets."""

    a: _StepSum
    b: _StepSum
    pivot: float

    def at(self, x: Float64Array) -> Float64Array:
        """The difference at the points ``x`` (logit(pi))."""
        return _difference(self.a, self.b, x, self.pivot)

    def slope(self, x: Float64Array) -> Float64Array:
        """Its derivative at the points ``x``."""
        return _slope(self.a, self.b, x)


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
    return step_sum(steps[keep], precision)


def rank_inversion_skews(
    a: RocCurve,
    b: RocCurve,
    *,
    scan_step: float = 0.01,
    tolerance: float = 1e-11,
    fast_above: int = FAST_ABOVE,
) -> Float64Array:
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
    fast_above : int
        Steps x scan points past which the scan is the convolution of the module docstring.

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
    difference = _Difference(first, second, pivot)
    count = int(np.ceil((high - low + 2.0 * _TAIL_MARGIN) / scan_step)) + 1
    roots: list[float] = []
    if locations.size * count > fast_above:
        lows, highs = _fast_brackets(first, second, low, high, pivot)
    else:
        grid = np.linspace(low - _TAIL_MARGIN, high + _TAIL_MARGIN, count)
        values = _difference(first, second, grid, pivot)
        # Two equal curves differ by rounding alone (their steps are summed in another order),
        # whose sign flips at random: a difference within the summation's error is a tie.
        rounding = _ROUNDING * max(1.0, float(first.weights.sum() + second.weights.sum()))
        signs = np.where(np.abs(values) > rounding, np.sign(values), 0.0)
        lows, highs = _brackets(grid, signs, roots)
    if lows.size and locations.size * count > fast_above:
        roots.extend(_newton(difference, (lows, highs), tolerance=tolerance))
    elif lows.size:
        roots.extend(_bisect(difference, (lows, highs), tolerance=tolerance))
    result: Float64Array = np.sort(_sigmoid(np.array(roots, dtype=np.float64)))
    return result


def _brackets(
    grid: Float64Array, signs: Float64Array, roots: list[float]
) -> tuple[Float64Array, Float64Array]:
    """Adjacent grid points whose signs differ; a run of exact zeros between opposite signs is
    a flip in the middle of the run (appended to ``roots``)."""
    nonzero = np.flatnonzero(signs)
    lows: list[float] = []
    highs: list[float] = []
    for i, j in itertools.pairwise(nonzero):
        if signs[i] == signs[j]:
            continue
        if j == i + 1:
            lows.append(grid[i])
            highs.append(grid[j])
        else:
            roots.append(float(grid[(i + j + 1) // 2]))
    return np.array(lows, dtype=np.float64), np.array(highs, dtype=np.float64)


def _fast_brackets(
    a: _StepSum, b: _StepSum, low: float, high: float, pivot: float
) -> tuple[Float64Array, Float64Array]:
    """The scan as one convolution on a fine grid; brackets kept where the exact ends differ."""
    h = _FAST_SPACING
    margin = np.ceil(_TAIL_MARGIN / h) * h
    weights = np.concatenate([a.weights, -b.weights])
    position = (np.concatenate([a.locations, b.locations]) - low) / h
    node = np.floor(position).astype(np.int64)
    share = position - node
    size = int(node.max()) + 2
    binned = np.bincount(node, (1.0 - share) * weights, minlength=size)
    binned += np.bincount(node + 1, share * weights, minlength=size)
    # Scan point j sits at low - margin + j h; a node k at low + k h. The step sum at j is
    # sum_k binned[k] sigmoid((j - k) h - margin): a convolution with the sampled logistic.
    count = int(np.ceil((high - low + 2.0 * margin) / h)) + 1
    offsets = np.arange(-(size - 1), count, dtype=np.float64) * h - margin
    kernel = _sigmoid(offsets)
    length = 1 << (size + kernel.size - 2).bit_length()  # a power of two >= the full length
    full = np.fft.irfft(np.fft.rfft(binned, length) * np.fft.rfft(kernel, length), length)
    values = (a.constant - b.constant) + full[size - 1 : size - 1 + count]
    grid = low - margin + np.arange(count) * h
    # Within the binning's error bound (plus the FFT's rounding) a value's sign is not known:
    # such points count as ties, and a flip is read across them between signs that are known.
    noise = float(np.abs(weights).sum()) * _MAX_SIGMOID_CURVATURE * h * h / 8.0 + 1e-12
    known = np.where(values > noise, 1.0, np.where(values < -noise, -1.0, 0.0))
    sure = np.flatnonzero(known)
    flips = np.flatnonzero(known[sure[1:]] != known[sure[:-1]])
    lows, highs = grid[sure[flips]], grid[sure[flips + 1]]
    if not lows.size:
        return lows, highs
    exact = np.sign(_difference(a, b, np.concatenate([lows, highs]), pivot))
    keep = exact[: lows.size] * exact[lows.size :] < 0.0
    return lows[keep], highs[keep]


def _slope(a: _StepSum, b: _StepSum, x: Float64Array) -> Float64Array:
    """d/dx of AP_a(x) - AP_b(x): the steps' logistic densities."""
    weights = np.concatenate([a.weights, -b.weights])
    locations = np.concatenate([a.locations, b.locations])
    e = np.exp(-np.abs(x[:, None] - locations[None, :]))
    return matrix_times(e / (1.0 + e) ** 2, weights)


def _newton(
    difference: _Difference, brackets: tuple[Float64Array, Float64Array], *, tolerance: float
) -> list[float]:
    """Newton's method inside each bracket (the difference is smooth there), for long curves
    where every evaluation costs a pass over tens of thousands of steps: a few steps instead of
    Algorithm 1's ~30 halvings. A root is accepted only once the exact difference changes sign
    across [x - tolerance/2, x + tolerance/2], the same guarantee as the bisection; a bracket
    where Newton does not settle within 8 steps goes to the bisection."""
    lows, highs = brackets
    x = 0.5 * (lows + highs)
    for _ in range(8):
        value = difference.at(x)
        slope = difference.slope(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope != 0.0, value / slope, 0.0)
        x = np.clip(x - step, lows, highs)
        if np.all(np.abs(step) <= tolerance / 4.0):
            break
    half = tolerance / 2.0
    ends = np.sign(difference.at(np.concatenate([x - half, x + half])))
    settled = ends[: x.size] * ends[x.size :] <= 0.0
    roots = [float(v) for v in x[settled]]
    if not settled.all():
        rest = (lows[~settled], highs[~settled])
        roots.extend(_bisect(difference, rest, tolerance=tolerance))
    return roots


def _bisect(
    difference: _Difference, brackets: tuple[Float64Array, Float64Array], *, tolerance: float
) -> list[float]:
    """Algorithm 1's bisection, run on all brackets at once (in logit(pi))."""
    lows, highs = brackets
    low_sign = np.sign(difference.at(lows))
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
        mid_sign = np.sign(difference.at(mids))
        exact = open_ & ~narrow & (mid_sign == 0.0)
        found[exact] = mids[exact]
        go_up = mid_sign == low_sign
        lows = np.where(go_up, mids, lows)
        highs = np.where(go_up, highs, mids)
    found = np.where(np.isnan(found), 0.5 * (lows + highs), found)
    return [float(v) for v in found]
