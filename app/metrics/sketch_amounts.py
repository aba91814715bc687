"""The amounts a curve sketch keeps for the value metrics (app/metrics/sketch.py).

When every row carries an amount (the transaction's value), the sketch keeps the positives'
amounts per entry and the negatives' amount at or above the threshold: still O(positives).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.types import Float64Array


def frozen(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``a``, made read-only: a sketch's arrays are shared, never changed."""
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class SketchAmounts:
    """The amounts behind the value metrics, aligned with a sketch's entries.

    Attributes
    ----------
    positive_at:
        Sum of the amounts of the positives at each entry's score.
    positive_sq_at:
        Sum of their squares (the bootstrap's spread of an entry's amount; nothing else).
    negative_flagged:
        Sum of the amounts of the negatives at or above the threshold.
    negative_flagged_sq:
        Sum of their squares (likewise).
    """

    positive_at: Float64Array
    positive_sq_at: Float64Array
    negative_flagged: float
    negative_flagged_sq: float

    def arrays(self) -> Float64Array:
        """The four parts as one float64 array: both per-entry arrays, then both sums."""
        sums = [self.negative_flagged, self.negative_flagged_sq]
        return np.concatenate([self.positive_at, self.positive_sq_at, sums])

    @classmethod
    def of_array(cls, values: Float64Array, entries: int) -> SketchAmounts:
        """Inverse of :meth:`arrays`, checked: finite and non-negative, of the right size."""
        if values.size != 2 * entries + 2 or not (
            np.all(np.isfinite(values)) and values.min(initial=0.0) >= 0.0
        ):
            raise InvalidInputError("inconsistent sketch amounts: size, or a negative amount")
        return cls(
            positive_at=frozen(values[:entries].copy()),
            positive_sq_at=frozen(values[entries : 2 * entries].copy()),
            negative_flagged=float(values[-2]),
            negative_flagged_sq=float(values[-1]),
        )


def sketch_amounts(
    scores: Float64Array,
    labels: npt.NDArray[Any],
    amounts: npt.ArrayLike,
    entries: Float64Array,
    threshold: float,
) -> SketchAmounts | None:
    """The window's :class:`SketchAmounts` on ``entries`` (descending), None if a row has no
    amount. Sums are taken in a sorted order, so the same rows read back in another order give
    the same floats."""
    a = np.asarray(amounts, dtype=np.float64)
    if a.shape != scores.shape:
        raise InvalidInputError(f"{a.size} amounts for {scores.size} scores")
    if np.isnan(a).any():
        return None
    if not np.isfinite(a).all() or a.min() < 0.0:
        raise InvalidInputError("amounts must be finite and >= 0 (NaN: the row has none)")
    positive = labels.astype(bool)
    # Entry of each positive (entries are descending; a positive's score is always an entry).
    at = np.searchsorted(-entries, -scores[positive])
    value = a[positive]
    order = np.lexsort((value, at))
    at, value = at[order], value[order]
    flagged = np.sort(a[~positive & (scores >= threshold)])
    return SketchAmounts(
        positive_at=frozen(np.bincount(at, weights=value, minlength=entries.size)),
        positive_sq_at=frozen(np.bincount(at, weights=value * value, minlength=entries.size)),
        negative_flagged=math.fsum(flagged.tolist()),
        negative_flagged_sq=math.fsum((flagged * flagged).tolist()),
    )
