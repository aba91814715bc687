"""Adaptive Gauss-Kronrod (G7-K15) quadrature of vector-valued integrands, in numpy.

Lampert's temporal and weighted integrated precisions integrate one precision per ROC point over
the same skew or time axis. The integrand is therefore evaluated for all points at once
(``f(x) -> array of shape (len(x), m)``), and every interval still above its error budget is
bisected together, so a kink (a skew capped at 1) costs a few levels of refinement, not a grid.

scipy has no adaptive rule that evaluates many intervals per call: ``quad_vec`` calls the
integrand once per node, ``cubature`` refines one interval at a time and ``quad`` takes scalar
integrands only. On the what-if callers (``python -m bench.quadrature``) they took 1.1-11x as
long for a weighted range and 14-160x for a 30-point trajectory (POST /whatif with a trajectory,
bench.analyses: 45 -> 311 ms with cubature), so this rule stays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from app.metrics.types import Float64Array

# Kronrod abscissae on [-1, 1] (non-negative half, descending) and weights; odd indices are the
# 7-point Gauss-Legendre nodes, whose weights are _GAUSS_WEIGHTS (QUADPACK's qk15 constants).
_KRONROD_NODES = np.array(
    [
        0.991455371120812639206854697526329,
        0.949107912342758524526189684047851,
        0.864864423359769072789712788640926,
        0.741531185599394439863864773280788,
        0.586087235467691130294144845693013,
        0.405845151377397166906606412076961,
        0.207784955007898467600689403773245,
        0.0,
    ]
)
_KRONROD_HALF_WEIGHTS = np.array(
    [
        0.022935322010529224963732008058970,
        0.063092092629978553290700663189204,
        0.104790010322250183839876322541518,
        0.140653259715525918745189590510238,
        0.169004726639267902826583426598550,
        0.190350578064785409913256402421014,
        0.204432940075298892414161999234649,
        0.209482141084727828012999174891714,
    ]
)
_GAUSS_HALF_WEIGHTS = np.array(
    [
        0.129484966168869693270611432679082,
        0.279705391489276667901467771423780,
        0.381830050505118944950369775488975,
        0.417959183673469387755102040816327,
    ]
)

# Full 15-node rule on [-1, 1]: nodes -x_0..-x_6, 0, x_6..x_0.
NODES = np.concatenate([-_KRONROD_NODES[:-1], _KRONROD_NODES[::-1]])
KRONROD_WEIGHTS = np.concatenate([_KRONROD_HALF_WEIGHTS[:-1], _KRONROD_HALF_WEIGHTS[::-1]])
GAUSS_WEIGHTS = np.zeros(15)
GAUSS_WEIGHTS[[1, 3, 5]] = _GAUSS_HALF_WEIGHTS[:3]
GAUSS_WEIGHTS[7] = _GAUSS_HALF_WEIGHTS[3]
GAUSS_WEIGHTS[[9, 11, 13]] = _GAUSS_HALF_WEIGHTS[2::-1]

_MAX_LEVELS = 60
_RESOLUTION_ULPS = 4096.0


def integrate(
    f: Callable[[Float64Array], Float64Array],
    a: float,
    b: float,
    *,
    tol: float = 1e-13,
) -> Float64Array:
    """Integrate a vector-valued ``f`` over ``[a, b]`` to an absolute error about ``tol * (b - a)``.

    Parameters
    ----------
    f : callable
        Maps a 1-d array of abscissae (never ``a`` or ``b`` themselves: Gauss-Kronrod nodes are
        interior) to an array of shape ``(len(x), m)``.
    a, b : float
        Finite bounds, ``a < b``.
    tol : float
        Error budget per unit length: an interval of width ``w`` is accepted once its
        Gauss/Kronrod difference (the maximum over the ``m`` components) is at most ``tol * w``.

    Returns
    -------
    ndarray of shape (m,)
        The integral of each component.
    """
    lows = np.array([a], dtype=np.float64)
    highs = np.array([b], dtype=np.float64)
    parts: list[Float64Array] = []
    for level in range(_MAX_LEVELS + 1):
        centres = 0.5 * (lows + highs)
        half_widths = 0.5 * (highs - lows)
        x = (centres[:, None] + half_widths[:, None] * NODES[None, :]).ravel()
        values = np.asarray(f(x), dtype=np.float64).reshape(len(lows), NODES.size, -1)
        kronrod = np.einsum("ink,n->ik", values, KRONROD_WEIGHTS) * half_widths[:, None]
        gauss = np.einsum("ink,n->ik", values, GAUSS_WEIGHTS) * half_widths[:, None]
        error = np.abs(kronrod - gauss).max(axis=1)
        # Within a few thousand ulps of its centre an interval's nodes are rounded enough that
        # a transition sharper than that looks like noise (e.g. pi' within 1e-12 of 1): it is
        # accepted, costing at most its own tiny width, instead of being split at every level
        # until memory runs out. The last level accepts everything (a non-integrable spike).
        unsplittable = half_widths <= _RESOLUTION_ULPS * np.spacing(np.abs(centres) + half_widths)
        done = (error <= tol * 2.0 * half_widths) | unsplittable | (level == _MAX_LEVELS)
        parts.append(kronrod[done].sum(axis=0))
        if done.all():
            break
        split_lows, split_highs = lows[~done], highs[~done]
        mids = 0.5 * (split_lows + split_highs)
        lows = np.concatenate([split_lows, mids])
        highs = np.concatenate([mids, split_highs])
    total: Float64Array = np.sum(parts, axis=0)
    return total
