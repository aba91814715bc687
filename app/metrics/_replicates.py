"""Bootstrap replicates of one sketch at any prior, for the analyses' intervals.

The Poisson bootstrap of :mod:`app.metrics.bootstrap` (the sketch merged into blocks of about
equal positives first), kept as prepared replicates so that any number of priors can be read from
the same draws; intervals are the replicates' percentiles shifted by (exact - merged) value, so
the merge moves the spread only, never the centre. Means over a range of priors take their
replicates by Gauss-Legendre quadrature on 8 nodes (the centre is computed exactly elsewhere).
Means along a time trajectory pi(t) take theirs on 16 priors that stand for the fractions of time
spent at each fraud rate (:func:`trajectory_nodes`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import numpy.typing as npt

from app.metrics._budget_kernel import TINY
from app.metrics._kernel import Prepared, ReplicateCounts, _rowdot
from app.metrics._poisson_inversion import NORMAL_ABOVE
from app.metrics._resampling import merge_blocks, poisson_counts
from app.metrics.errors import InvalidInputError
from app.metrics.result import counts_of
from app.metrics.sketch import CurveSketch
from app.metrics.types import FloatingArray, Interval

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)
_TRAJECTORY_BINS = 16
_EDGE = 1e-9
"""Trajectory priors of exactly 0 or 1 are read at 1e-9 and 1 - 1e-9: the limits of every
replicate's precision there (a spread node only; the centre is exact)."""


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

        def draw(lam: FloatingArray) -> FloatingArray:
            return poisson_counts(np.asarray(lam, dtype=np.float64), replicates, rng, NORMAL_ABOVE)

        self.replicates = Prepared.of(
            ReplicateCounts(
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
        return float(_calibrated(self.merged, pi)[metric][0])

    def replicate_values(self, metric: str, pi: float) -> FloatingArray:
        """Every replicate's calibrated ``metric`` at ``pi`` (NaN where undefined)."""
        return _calibrated(self.replicates, pi)[metric]

    def mean_intervals(
        self,
        nodes: npt.NDArray[np.float64],
        weights: npt.NDArray[np.float64],
        centres: dict[str, float | None],
        level: float,
    ) -> dict[str, Interval | None]:
        """Percentile intervals of each metric's weighted mean over the prior ``nodes``, shifted
        so that they hold ``centres`` (the exact means); None where a centre is None.

        Each node's calibration is computed once for every metric (it is most of the cost).
        """
        wanted = [name for name, centre in centres.items() if centre is not None]
        spreads = {name: np.zeros(self.replicates.pi.shape[0]) for name in wanted}
        merged = dict.fromkeys(wanted, 0.0)
        for p, weight in zip(nodes.tolist(), weights.tolist(), strict=True):
            if not wanted:
                break
            replicate_columns = _calibrated(self.replicates, p)
            merged_columns = _calibrated(self.merged, p)
            for name in wanted:
                spreads[name] += weight * replicate_columns[name]
                merged[name] += weight * float(merged_columns[name][0])
        out: dict[str, Interval | None] = dict.fromkeys(centres)
        for name in wanted:
            centre = centres[name]
            assert centre is not None
            out[name] = percentile_interval(spreads[name], centre - merged[name], level)
        return out


def _calibrated(prepared: Prepared, pi: float) -> Mapping[str, FloatingArray]:
    """Calibrated precision and AP at ``pi``: the kernel's formulas and floats
    (:func:`app.metrics._kernel._prior_dependent`), without the metrics the analyses never read
    here (best F1's argmax and PR-Gain's area were two thirds of a compare's bootstrap)."""
    c = prepared.curve
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        k = (prepared.pi * (1.0 - pi)) / (pi * (1.0 - prepared.pi))
        predicted = c.tp + c.fp * k[:, None]
        return {
            "precision": c.tp_t / (c.tp_t + c.fp_t * k),
            "average_precision": _rowdot(c, c.pos, c.tp / np.maximum(predicted, TINY)) / c.npos,
        }


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


def trajectory_nodes(
    times: npt.NDArray[np.float64],
    pi_of_t: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
    bins: int = _TRAJECTORY_BINS,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Priors and weights (summing to 1) for a mean over time along ``pi_of_t``.

    A mean over time depends on pi(t) only through how long pi spends at each value, so the
    trajectory (8 Gauss-Legendre nodes on each stretch between its points ``times``) is sorted
    by log-odds and cut into ``bins`` slices of equal time; each slice is read at its
    time-weighted mean log-odds. A replicate then costs ``bins`` evaluations whatever the number
    of points (a 10,000-point trajectory would otherwise cost 80,000). The metrics are smooth in
    log-odds, so the slices' midpoints move the replicates' spread only slightly; the centre is
    exact (shifted, as for ranges).
    """
    starts, ends = times[:-1, None], times[1:, None]
    t = (starts + (ends - starts) * (_NODES + 1.0) / 2.0).ravel()
    w = ((ends - starts) * _WEIGHTS / 2.0).ravel()
    pis = np.clip(np.asarray(pi_of_t(t), dtype=np.float64), _EDGE, 1.0 - _EDGE)
    logits = np.log(pis) - np.log1p(-pis)
    order = np.argsort(logits, kind="stable")
    logits, w = logits[order], w[order] / w.sum()
    # Each node's slice: where the middle of its share of time falls.
    middle = np.cumsum(w) - w / 2.0
    slices = np.minimum((middle * bins).astype(np.intp), bins - 1)
    mass = np.bincount(slices, weights=w, minlength=bins)
    kept = mass > 0.0
    centre = np.bincount(slices, weights=w * logits, minlength=bins)[kept] / mass[kept]
    nodes: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-centre))
    result = np.asarray(mass[kept], dtype=np.float64)
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
