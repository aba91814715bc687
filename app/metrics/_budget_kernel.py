"""The kernel's alert-budget and money metrics (see app/metrics/_kernel.py), per row of a batch
of curves: the alerts at the threshold, precision at k over the top share of the rows, and the
amounts caught and flagged.

Notation as in the kernel: ``k`` weighs each row's false positives (``None``: weight 1, the
regular metrics; calibrated, ``k = pi (1 - pi0) / (pi0 (1 - pi))``), one per row ``(R,)`` or
one per prior and row ``(G, R)``: every formula here is elementwise in ``k`` (its one search,
the top's end, is exact), so a prior grid's columns come out of one call with each prior's
floats, and the results have ``k``'s shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from app.metrics.types import FloatingArray

if TYPE_CHECKING:  # the kernel imports this module; its types are only annotated here
    from app.metrics._kernel import AmountCounts, Columns, _Curve

TINY = 1e-30
"""A Python float (no upcast of float32 replicates); any real denominator here is >= 1 or 0."""


def budget_columns(c: _Curve, k: FloatingArray | None, share: FloatingArray | None) -> Columns:
    """The alert-budget metrics, with false positives weighted by ``k`` (``None``: weight 1).

    ``alerts``: rows at or above the threshold; calibrated, the rows a window of the same size
    would flag at pi0 (positives weigh ``n / M`` with ``M = P + k N`` the weighted rows).
    ``precision_at_k``: the positive share of the top ``share`` of the (weighted) rows, a tie
    group cut in proportion (the mean over the orders that break its ties);
    ``precision_at_k_max``: the most any ranking could reach there, ``min(P, top) / top``.
    See docs/alert-budget.md for the derivation.
    """
    out: Columns = {"alerts": alerts(c, k)}
    if share is None:
        nan = np.full(out["alerts"].shape, np.nan, dtype=c.npos.dtype)
        out.update(precision_at_k=nan, precision_at_k_max=nan)
        return out
    top = top_rows(c, k, share)
    out["precision_at_k"] = precision_at_k(c, k, top)
    out["precision_at_k_max"] = np.minimum(c.npos, top) / top
    return out


def top_rows(c: _Curve, k: FloatingArray | None, share: FloatingArray) -> FloatingArray:
    """The (weighted) rows in each row's top ``share``: ``share (P + k N)``."""
    top: FloatingArray = share * (c.npos + (c.nneg if k is None else c.nneg * k))
    return top


def precision_at_k(c: _Curve, k: FloatingArray | None, top: FloatingArray) -> FloatingArray:
    """The positive share of each row's ``top`` highest-scored (weighted) rows
    (:func:`top_rows`), a tie group cut in proportion: :func:`budget_columns`'
    ``precision_at_k`` alone (card precision needs nothing else)."""
    # Weighted rows scored >= each entry, tp + k fp, entries first ``(E, ..., R)``: each
    # step's inner loop then runs over the replicate rows, not over a sketch's ten to fifty
    # entries (2-3x faster at a bootstrap chunk's size), in one buffer (a fresh
    # replicate-sized array costs a fresh mapping).
    fp, tp = c.by_entry
    if k is None:
        above = fp + tp
    else:
        lead = (fp.shape[0],) + (1,) * (k.ndim - 1) + (fp.shape[1],)
        above = np.multiply(fp.reshape(lead), k)
        above += tp.reshape(lead)
    entries = above.shape[0]
    last = entries - 1
    # The entry where the top ends: the first not below it. ``above`` grows along each row
    # (cumulative counts, k >= 0), so the entries below the top are a prefix and its length
    # finds its end (a count of bytes, in bytes where it fits); a row below the top
    # throughout ends at the last entry, a row of NaNs (no rows drawn) at the first.
    below = above < top
    count = np.add.reduce(
        below.view(np.uint8), axis=0, dtype=np.uint8 if entries < 256 else np.intp
    )
    # Each row's entry j as one flat index into the (R, E) counts.
    at = c.rows * entries + np.minimum(count, last)
    pos, tied = np.take(c.pos, at), np.take(c.tied, at) * (1.0 if k is None else k)
    # Its weighted rows recomputed as ``above`` computed them: the same floats.
    fp_j, tp_j = np.take(c.fp, at), np.take(c.tp, at)
    strictly_above = (fp_j + tp_j if k is None else fp_j * k + tp_j) - pos - tied
    inside = np.clip(top - strictly_above, 0.0, None)
    caught = tp_j - pos + inside * pos / np.maximum(pos + tied, TINY)
    # Past the last entry only negatives remain: every positive is in the top.
    caught = np.where(above[last] < top, c.npos, caught)
    precision: FloatingArray = caught / top
    return precision


def alerts(c: _Curve, k: FloatingArray | None) -> FloatingArray:
    """Rows at or above the threshold; calibrated (``k``), the rows a window of the same size
    would flag at pi0: positives weigh ``n / M``, negatives ``k n / M``, ``M = P + k N``."""
    alerts = c.tp_t + (c.fp_t if k is None else c.fp_t * k)
    if k is None:
        return alerts
    weighted: FloatingArray = alerts * (c.npos + c.nneg) / (c.npos + c.nneg * k)
    return weighted


@dataclass(frozen=True)
class AmountValues:
    """The amounts at the threshold, per row (NaN where a window has none), and the cost of
    one review (NaN: none set)."""

    caught: FloatingArray  # positives' amount at or above the threshold
    total: FloatingArray  # all positives' amount
    flagged_negative: FloatingArray  # negatives' amount at or above the threshold
    review_cost: FloatingArray

    @classmethod
    def of(
        cls,
        c: _Curve,
        amounts: AmountCounts | None,
        j: int | npt.NDArray[np.intp],
        review_cost: FloatingArray | float | None,
    ) -> AmountValues:
        nan = np.full_like(c.npos, np.nan)
        cost = nan if review_cost is None else np.asarray(review_cost, dtype=c.npos.dtype)
        cost = np.broadcast_to(cost, c.npos.shape)
        if amounts is None:
            return cls(caught=nan, total=nan, flagged_negative=nan, review_cost=cost)
        # Sequential sums (cumsum), as for the counts: a window's floats do not depend on the
        # batch it is evaluated in.
        cumulative = np.cumsum(amounts.positive_at, axis=1)
        return cls(
            caught=cumulative[c.rows, j],
            total=cumulative[:, -1],
            flagged_negative=amounts.negative_flagged,
            review_cost=cost,
        )

    def recall(self) -> FloatingArray:
        """``value_recall``: the share of the fraud amount caught (prior-invariant)."""
        with np.errstate(divide="ignore", invalid="ignore"):  # no fraud amount: NaN
            recall: FloatingArray = self.caught / self.total
        return recall

    def at(self, c: _Curve, k: FloatingArray | None, alerts: FloatingArray) -> Columns:
        """``value_precision`` and ``net_savings`` with negatives weighted by ``k`` (``None``:
        weight 1); ``alerts`` are the (calibrated) alerts of :func:`budget_columns`.

        Calibrated, a window of the same size at pi0 weighs positives ``n / M`` and negatives
        ``k n / M`` (``M = P + k N``), as the calibrated alerts do; its caught amount is the
        caught amount times ``n / M``.
        """
        flagged = self.flagged_negative if k is None else self.flagged_negative * k
        caught = self.caught
        if k is not None:
            caught = caught * (c.npos + c.nneg) / (c.npos + c.nneg * k)
        return {
            "value_precision": self.caught / (self.caught + flagged),
            "net_savings": caught - self.review_cost * alerts,
        }
