"""Real dilogarithm Li2(x) for x <= 1, in numpy.

Lampert & Gancarski (2014) eq. (20) needs Li2 on [0, 1]; no runtime dependency beyond numpy is
allowed in the kernel, so it is computed here from its power series after functional equations
move the argument into |x| <= 1/2, where the series converges at least like 2^-k / k^2
(60 terms leave a remainder below 1e-20).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

_PI2_6 = math.pi**2 / 6.0
_TERMS = np.arange(1, 61, dtype=np.float64)


def _series(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Sum_{k>=1} x^k / k^2 for |x| <= 1/2 (Horner-free: 60 powers are cheap and exact enough)."""
    powers = np.power.outer(x, _TERMS)
    result: npt.NDArray[np.float64] = (powers / _TERMS**2).sum(axis=-1)
    return result


def _dilog_0_1(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Li2 on [0, 1]: the series below 1/2, Euler's reflection above it."""
    out = np.empty_like(x)
    low = x <= 0.5
    out[low] = _series(x[low])
    high = x[~low]
    one_minus = 1.0 - high
    # Euler: Li2(x) + Li2(1-x) = pi^2/6 - ln(x) ln(1-x); the log product tends to 0 at x = 1.
    with np.errstate(divide="ignore", invalid="ignore"):
        log_product = np.where(one_minus > 0.0, np.log(high) * np.log(one_minus), 0.0)
    out[~low] = _PI2_6 - log_product - _series(one_minus)
    return out


def dilog(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Real dilogarithm ``Li2(x) = sum_k x^k / k^2`` for real ``x <= 1``.

    Parameters
    ----------
    x : array_like
        Real arguments, each at most 1 (the real branch).

    Returns
    -------
    ndarray
        Li2 of each argument, accurate to about 1e-15 absolute.

    Notes
    -----
    ``scipy.special.spence(1 - x)`` is the same function (used to cross-check it in the tests).
    Negative arguments use Landen's identity ``Li2(x) = -Li2(x/(x-1)) - ln(1-x)^2 / 2``,
    which maps ``x < 0`` into ``(0, 1)``.
    """
    values = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(values)) or np.any(values > 1.0):
        raise ValueError("dilog is defined here for finite real x <= 1")
    flat = values.ravel()
    out = np.empty_like(flat)
    negative = flat < 0.0
    out[~negative] = _dilog_0_1(flat[~negative])
    neg = flat[negative]
    out[negative] = -_dilog_0_1(neg / (neg - 1.0)) - 0.5 * np.log1p(-neg) ** 2
    return out.reshape(values.shape)
