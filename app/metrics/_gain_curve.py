"""The PR-Gain curve's area per row of a batch of curves (the kernel's ``pr_gain_auc``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from app.metrics.types import FloatingArray

if TYPE_CHECKING:  # the kernel imports this module; its curve type is only annotated here
    from app.metrics._kernel import _Curve


@dataclass(frozen=True)
class GainArea:
    """Area under the PR-Gain curve over recall gain in [0, 1] (Flach & Kull 2015).

    Follows the reference implementation (meeliskull/prg, ``calc_auprg``): one point per
    distinct score, trapezoids in (recall gain, precision gain) space for every segment whose
    left end has recall gain >= 0, and the segment crossing recall gain 0 cut at the point
    interpolated linearly in contingency space. Negative precision gains count (negative area).

    Precision gain ``1 - (P/N)(FP/TP)`` is the same calibrated or not (so it is computed once);
    recall gain ``(rec - p) / ((1 - p) rec) = (1 - p P / TP) / (1 - p)`` uses the prior p (pi,
    or pi0 when calibrated). A segment from TP_l to TP therefore has width
    ``p P (1/TP_l - 1/TP) / (1 - p)``.
    """

    inv_tp: FloatingArray
    suffix: FloatingArray  # sum over entries i >= j of (1/TP_l - 1/TP)(pg_l + pg_r), per row
    pg_r: FloatingArray
    ratio: FloatingArray

    @classmethod
    def of(cls, c: _Curve) -> GainArea:
        ratio = (c.npos / c.nneg)[:, None]
        tp_l = c.tp - c.pos
        inv_tp, inv_tp_l = 1.0 / c.tp, 1.0 / tp_l
        fp_over_tp = c.fp * inv_tp
        pg_r = 1.0 - ratio * fp_over_tp
        pg_sum = 2.0 - ratio * (fp_over_tp + (c.fp - c.tied) * inv_tp_l)
        # Segments starting at TP_l = 0 (recall gain -inf) give inf/NaN terms. They lie at or
        # before the first entry with positives, which is at or before the crossing segment m,
        # and only the suffixes after m are read, so they never reach a result.
        h = (inv_tp_l - inv_tp) * pg_sum
        suffix = np.cumsum(h[:, ::-1], axis=1)[:, ::-1]
        return cls(inv_tp=inv_tp, suffix=suffix, pg_r=pg_r, ratio=ratio[:, 0])

    def area(self, c: _Curve, prior: FloatingArray | float) -> FloatingArray:
        """Area with recall gain at ``prior`` (a float, or one value per row)."""
        return self._area(c, prior * c.npos, 1.0 - prior)

    def areas(self, c: _Curve, priors: Sequence[float]) -> FloatingArray:
        """:meth:`area` at each of ``priors``, one row a prior ``(P, R)``, in one pass: the
        same floats as one call a prior (a float prior meets the curve's counts in their own
        dtype, and so do these), without a prior grid's per-call cost."""
        dtype = c.npos.dtype
        column = np.array(priors, dtype=dtype)[:, None]
        complement = np.array([1.0 - prior for prior in priors], dtype=dtype)[:, None]
        return self._area(c, column * c.npos, complement)

    def _area(
        self, c: _Curve, tp_x: FloatingArray, complement: FloatingArray | float
    ) -> FloatingArray:
        """The area where recall gain is 0 at ``tp_x`` true positives (``p P``, per row or per
        prior and row), ``complement`` being ``1 - p``."""
        rows = c.rows
        m = np.argmax(c.tp > tp_x[..., None], axis=-1)  # the segment that crosses recall gain 0
        scale = tp_x / complement
        last = self.suffix.shape[1] - 1
        # The whole segments after m (none if m is the last entry).
        after = np.where(m < last, self.suffix[rows, np.minimum(m + 1, last)], 0.0)
        tp_r, pos, tied = c.tp[rows, m], c.pos[rows, m], c.tied[rows, m]
        fp_x = c.fp[rows, m] - tied + (tp_x - (tp_r - pos)) / pos * tied
        pg_x = 1.0 - self.ratio * (fp_x / tp_x)
        rg_r = scale * (1.0 / tp_x - self.inv_tp[rows, m])
        result: FloatingArray = scale * after / 2.0 + rg_r * (self.pg_r[rows, m] + pg_x) / 2.0
        return result
