"""Average precision as a function of the prior, cheap to evaluate many times.

AP(pi) of a curve is a sum of unit-width logistic steps in x = logit(pi) (see
:mod:`app.metrics._rank_inversion`): analytic in a strip of half-width pi around the real axis.
So on pieces of x at most 4 wide, a 32-node Chebyshev interpolant reproduces it to about 1e-15
(the Bernstein ellipse of a 4-wide piece reaching 90% of the way to the strip's edge has
rho > 3: error ~ rho^-32 < 1e-15), and each later evaluation costs O(pieces) instead of
O(curve points). Beyond 40 units past the outermost step AP is within e^-40 of its asymptote,
so x is clamped there; pi = 0 and pi = 1 take their exact limits.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import Chebyshev

from app.metrics._rank_inversion import matrix_times
from app.metrics.types import Float64Array

_NODES = 32
_PIECE = 4.0
_TAIL = 40.0
_CHUNK = 256


class ApOfPrior:
    """AP(pi) of the curve ``(tpr, fpr)`` for priors whose logits lie in [x_lo, x_hi]."""

    def __init__(self, tpr: Float64Array, fpr: Float64Array, x_lo: float, x_hi: float) -> None:
        steps = np.diff(tpr, prepend=0.0)
        keep = steps > 0.0
        perfect = fpr[keep] == 0.0  # complete at every prior: a constant
        self.at_zero = float(steps[keep][perfect].sum())
        self.at_one = float(steps[keep].sum())
        self._weights = steps[keep][~perfect]
        self._locations = np.log(fpr[keep][~perfect]) - np.log(tpr[keep][~perfect])
        if self._locations.size:
            # Both ends clamped into the steps' span, so priors all at 0 or all at 1 (logits of
            # -inf or +inf at both ends) leave a finite, empty interval rather than inf - inf.
            first = float(self._locations.min()) - _TAIL
            last = float(self._locations.max()) + _TAIL
            lo = min(max(x_lo, first), last)
            hi = max(min(x_hi, last), first)
        else:
            lo = hi = 0.0
        self._lo, self._hi = lo, max(lo, hi)
        count = max(1, int(np.ceil((self._hi - self._lo) / _PIECE)))
        self._edges = np.linspace(self._lo, self._hi, count + 1)
        self._pieces = [
            Chebyshev.interpolate(self._exact, _NODES, domain=[a, b]) if b > a else None
            for a, b in zip(self._edges[:-1], self._edges[1:], strict=True)
        ]
        self._flat = self._exact(np.array([self._lo]))[0]

    def _exact(self, x: Float64Array) -> Float64Array:
        """The step sum at logits ``x`` (no interpolation)."""
        out = np.empty(x.shape)
        for start in range(0, x.size, _CHUNK):
            z = x[start : start + _CHUNK, None] - self._locations[None, :]
            e = np.exp(-np.abs(z))
            sigmoid = np.where(z >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))
            out[start : start + _CHUNK] = self.at_zero + matrix_times(sigmoid, self._weights)
        return out

    def __call__(self, pis: Float64Array) -> Float64Array:
        """AP at each prior of ``pis`` (in [0, 1])."""
        out = np.empty(pis.shape)
        zero, one = pis <= 0.0, pis >= 1.0
        out[zero], out[one] = self.at_zero, self.at_one
        inside = ~(zero | one)
        x = np.clip(np.log(pis[inside]) - np.log1p(-pis[inside]), self._lo, self._hi)
        if self._hi == self._lo:
            out[inside] = self._flat
            return out
        which = np.clip(np.searchsorted(self._edges, x, side="right") - 1, 0, len(self._pieces) - 1)
        values = np.empty(x.shape)
        for index, piece in enumerate(self._pieces):
            chosen = which == index
            if piece is not None and chosen.any():
                values[chosen] = piece(x[chosen])
        out[inside] = values
        return out
