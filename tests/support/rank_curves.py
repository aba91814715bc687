"""ROC curves whose AP order over the skew is known exactly (rank inversion tests).

With y = pi / (1 - pi) the AP difference of two ROC curves is a rational function of y, so its
flips are the positive real roots of a polynomial (numpy.polynomial): an independent exact
method the kernel's scans are checked against.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numpy.polynomial import Polynomial

Curve = tuple[list[float], list[float]]


def exact_flips(a: Curve, b: Curve) -> npt.NDArray[np.float64]:
    """Positive real roots of the numerator of AP_a(y) - AP_b(y), as skews pi = y / (1 + y)."""
    terms: list[tuple[float, float, float]] = []  # (signed weight, tpr, fpr)
    for sign, (tpr, fpr) in ((1.0, a), (-1.0, b)):
        previous = 0.0
        for t, f in zip(tpr, fpr, strict=True):
            terms.append((sign * (t - previous), t, f))
            previous = t
    # sum_i w_i * y t_i / (y t_i + f_i) = 0  <=>  sum_i w_i t_i y prod_{j != i} (t_j y + f_j) = 0
    numerator = Polynomial([0.0])
    for i, (w, t, _) in enumerate(terms):
        product = Polynomial([0.0, w * t])
        for j, (_, tj, fj) in enumerate(terms):
            if j != i:
                product = product * Polynomial([fj, tj])
        numerator = numerator + product
    roots = numerator.roots()
    real = roots[(np.abs(roots.imag) < 1e-9) & (roots.real > 1e-12)].real
    return np.sort(real / (1.0 + real))


ONE_CROSSING = (([1.0], [0.1]), ([0.5, 1.0], [0.01, 0.5]))
TWO_CROSSINGS = (([0.5, 1.0], [0.01, 0.5]), ([0.2, 1.0], [0.001, 0.3]))


def empirical_curve(
    rng: np.random.Generator, positives: int, shift: float, spread: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(tpr, fpr) at every positive's score: binormal positives, 25 negatives per positive."""
    pos = rng.normal(shift, spread, positives)
    neg = rng.normal(0.0, 1.0, 25 * positives)
    thresholds = np.unique(pos)[::-1]
    tpr = (pos[None, :] >= thresholds[:, None]).mean(axis=1)
    fpr = (neg[None, :] >= thresholds[:, None]).mean(axis=1)
    return tpr, fpr
