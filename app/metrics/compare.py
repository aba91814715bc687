"""Champion against challenger: which model's AP is higher at a fraud rate, with an interval.

Both models' curve sketches are resampled with the Poisson bootstrap of :mod:`app.metrics.bootstrap`
(each sketch merged into blocks first, the interval shifted by exact minus merged value, so the
centre is exact), and the difference challenger - champion of average precision at a prior is
taken replicate by replicate. The two sketches are resampled independently: for shadow traffic
(the same rows scored by both models) the true sampling error of the difference is smaller,
because both models see the same rows, so the interval errs on the wide (cautious) side.

Over a range of priors the difference of the areas under the integrated P-R curves (the mean of
AP(pi) over the range, Lampert section 4.3.2) is exact at the centre; its replicates take that
mean by Gauss-Legendre quadrature on 8 nodes, which moves the spread only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.metrics._kernel import Counts, Prepared
from app.metrics._resampling import RealArray, merge_blocks, poisson_counts
from app.metrics._validation import FloatArray, check_pi0
from app.metrics.errors import InvalidInputError
from app.metrics.result import counts_of
from app.metrics.sketch import CurveSketch
from app.metrics.skew import average_precision_at_skew, integrated_auc_pr

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)


@dataclass(frozen=True)
class Difference:
    """AP of both models at ``pi`` (or over [pi_lo, pi_hi]) and challenger minus champion."""

    champion: float
    challenger: float
    difference: float
    interval: tuple[float, float] | None
    """Percentile interval of the difference; None if too many replicates were undefined."""


class _Resampled:
    """One sketch's exact counts, its merged counts and their bootstrap replicates."""

    def __init__(
        self, sketch: CurveSketch, rng: np.random.Generator, replicates: int, max_entries: int
    ) -> None:
        if sketch.positives == 0 or sketch.negatives == 0:
            raise InvalidInputError("comparing average precision needs both classes in each model")
        self.sketch = sketch
        merged = counts_of(sketch)
        if sketch.scores.size > max_entries:
            merged = merge_blocks(sketch, max_entries)
        self.merged = Prepared.of(merged)
        self.replicates = Prepared.of(
            Counts(
                positives_at=poisson_counts(merged.positives_at[0], replicates, rng, 30.0),
                negatives_tied=poisson_counts(merged.negatives_tied[0], replicates, rng, 30.0),
                negatives_between=poisson_counts(
                    merged.negatives_between[0], replicates, rng, 30.0
                ),
                negatives_below=rng.poisson(merged.negatives_below[0], size=replicates).astype(
                    np.float32
                ),
                threshold_index=merged.threshold_index,
                scores=merged.scores,
            ),
            sequential=False,
        )

    def merged_ap(self, pi: float) -> float:
        return float(self.merged.calibrated(pi)["average_precision"][0])

    def replicate_ap(self, pi: float) -> RealArray:
        return self.replicates.calibrated(pi)["average_precision"]


def compare_average_precision(
    champion: CurveSketch,
    challenger: CurveSketch,
    priors: Sequence[float],
    *,
    pi_range: tuple[float, float] | None = None,
    seed: int = 0,
    replicates: int = 1000,
    level: float = 0.95,
    max_entries: int = 128,
) -> tuple[list[Difference], Difference | None]:
    """AP differences (challenger - champion) at each prior, and over ``pi_range`` if given.

    Parameters
    ----------
    champion, challenger:
        The two models' (pooled) curve sketches.
    priors:
        Fraud rates in (0, 1) to compare at.
    pi_range:
        ``(pi_lo, pi_hi)`` with ``0 <= pi_lo < pi_hi <= 1``: compare the integrated areas too.
    seed, replicates, level, max_entries:
        As in :func:`app.metrics.bootstrap`.
    """
    if replicates < 10:
        raise InvalidInputError(f"replicates must be at least 10, got {replicates}")
    if not 0.0 < level < 1.0:
        raise InvalidInputError(f"level must lie strictly between 0 and 1, got {level}")
    rng = np.random.default_rng(seed)
    a = _Resampled(champion, rng, replicates, max_entries)
    b = _Resampled(challenger, rng, replicates, max_entries)
    alpha = (1.0 - level) / 2.0
    out = []
    for prior in priors:
        pi = check_pi0(prior)
        exact_a = average_precision_at_skew(champion, pi)
        exact_b = average_precision_at_skew(challenger, pi)
        spread = b.replicate_ap(pi) - a.replicate_ap(pi)
        shift = (exact_b - exact_a) - (b.merged_ap(pi) - a.merged_ap(pi))
        out.append(Difference(exact_a, exact_b, exact_b - exact_a, _cut(spread, shift, alpha)))
    ranged = None
    if pi_range is not None:
        lo, hi = pi_range
        if not 0.0 <= lo < hi <= 1.0:
            raise InvalidInputError(f"need 0 <= pi_lo < pi_hi <= 1, got [{lo}, {hi}]")
        area_a = integrated_auc_pr(champion, lo, hi)
        area_b = integrated_auc_pr(challenger, lo, hi)
        nodes = lo + (hi - lo) * (_NODES + 1.0) / 2.0  # interior: never 0 or 1
        weights = _WEIGHTS / 2.0
        spread = sum(
            (
                w * (b.replicate_ap(p) - a.replicate_ap(p))
                for p, w in zip(nodes, weights, strict=True)
            ),
            start=np.zeros(replicates),
        )
        merged = sum(
            w * (b.merged_ap(p) - a.merged_ap(p)) for p, w in zip(nodes, weights, strict=True)
        )
        shift = (area_b - area_a) - float(merged)
        ranged = Difference(area_a, area_b, area_b - area_a, _cut(spread, shift, alpha))
    return out, ranged


def _cut(
    replicates: FloatArray | RealArray, shift: float, alpha: float
) -> tuple[float, float] | None:
    """Percentile interval of the finite replicates shifted by ``shift``; None if fewer than
    ``1 - alpha`` of them are finite (a tail percentile would then be meaningless)."""
    values = np.asarray(replicates, dtype=np.float64)
    finite = values[np.isfinite(values)]
    if finite.size < values.size * (1.0 - alpha):
        return None
    lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
    return float(lo) + shift, float(hi) + shift
