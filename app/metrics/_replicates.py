"""Bootstrap replicates of one sketch at any prior, for the analyses' intervals.

The Poisson bootstrap of :mod:`app.metrics.bootstrap` (the sketch merged into blocks of about
equal positives first), kept as prepared replicates so that any number of priors can be read from
the same draws; intervals are the replicates' percentiles shifted by (exact - merged) value, so
the merge moves the spread only, never the centre. Means over a range of priors take their
replicates by Gauss-Legendre quadrature on 8 nodes (the centre is computed exactly elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from app.metrics._kernel import Counts, Prepared
from app.metrics._resampling import RealArray, merge_blocks, poisson_counts
from app.metrics.errors import InvalidInputError
from app.metrics.result import counts_of
from app.metrics.sketch import CurveSketch

Interval = tuple[float, float]
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)
_NORMAL_ABOVE = 30.0


class Resampled:
    """One sketch's merged counts and their bootstrap replicates, readable at any prior."""

    def __init__(
        self,
        sketch: CurveSketch,
        rng: np.random.Generator,
        replicates: int,
        max_entries: int = 128,
    ) -> None:
        if sketch.positives == 0 or sketch.negatives == 0:
            raise InvalidInputError("bootstrap intervals need both classes in the pooled windows")
        merged = counts_of(sketch)
        if sketch.scores.size > max_entries:
            merged = merge_blocks(sketch, max_entries)
        self.merged = Prepared.of(merged)

        def draw(lam: RealArray) -> RealArray:
            return poisson_counts(np.asarray(lam, dtype=np.float64), replicates, rng, _NORMAL_ABOVE)

        self.replicates = Prepared.of(
            Counts(
                positives_at=draw(merged.positives_at[0]),
                negatives_tied=draw(merged.negatives_tied[0]),
                negatives_between=draw(merged.negatives_between[0]),
                negatives_below=rng.poisson(merged.negatives_below[0], size=replicates).astype(
                    np.float32
                ),
                threshold_index=merged.threshold_index,
                scores=merged.scores,
            ),
            sequential=False,
        )

    def merged_value(self, metric: str, pi: float) -> float:
        """The merged counts' calibrated ``metric`` at ``pi``."""
        return float(self.merged.calibrated(pi)[metric][0])

    def replicate_values(self, metric: str, pi: float) -> RealArray:
        """Every replicate's calibrated ``metric`` at ``pi`` (NaN where undefined)."""
        return self.replicates.calibrated(pi)[metric]


def range_nodes(
    lo: float, hi: float, weight: Callable[[npt.NDArray[np.float64]], npt.ArrayLike] | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """Quadrature nodes inside (lo, hi) and weights summing to 1 for a (weighted) mean over
    the range; None when the weight vanishes at every node."""
    nodes = lo + (hi - lo) * (_NODES + 1.0) / 2.0  # interior: never 0 or 1
    weights = _WEIGHTS / 2.0
    if weight is not None:
        weights = weights * np.asarray(weight(nodes), dtype=np.float64)
    total = float(weights.sum())
    if not total > 0.0:
        return None
    result: npt.NDArray[np.float64] = weights / total
    return nodes, result


def percentile_interval(replicates: npt.ArrayLike, shift: float, level: float) -> Interval | None:
    """Percentile interval of the finite replicates shifted by ``shift``; None if fewer than
    ``(1 + level) / 2`` of them are finite (a tail percentile would then be meaningless)."""
    alpha = (1.0 - level) / 2.0
    values = np.asarray(replicates, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0 or finite.size < values.size * (1.0 - alpha):
        return None
    lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(lo) + shift, float(hi) + shift
