"""Simulated windows for the detection benchmark: Siblini et al.'s Gaussian setup, as sketches.

Negative scores are N(0, 1), positive scores N(mu, 1) (Siblini et al. 2020, section 3.2), so the
model's ranking quality is set by mu alone and the fraud rate by the share of positives. A
window is drawn directly as its curve sketch, which is exact in distribution and costs
O(positives) instead of O(rows): the positives' scores are drawn and sorted, and the negatives
falling between consecutive positive scores (and the threshold) are one multinomial draw over the
normal probabilities of those intervals. So a 10^6-row window costs what its positives cost.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from scipy.special import ndtr, ndtri

from app.metrics import CurveSketch, bin_edges
from app.metrics.types import Float64Array

THRESHOLD = 2.0
HEALTHY_MU = 2.5
"""Positives' mean score of the healthy model: calibrated AP 0.375 at pi0 = 0.005 (about 0.40,
the issue's example stream)."""


def gaussian_sketch(
    rng: np.random.Generator, positives: int, negatives: int, mu: float
) -> CurveSketch:
    """The sketch of a window of ``positives`` scores ~ N(mu, 1) and ``negatives`` ~ N(0, 1)."""
    return sketch_with(rng, rng.normal(mu, 1.0, positives), negatives)


def sketch_with(rng: np.random.Generator, scores: Float64Array, negatives: int) -> CurveSketch:
    """The sketch of a window of these positives' scores and ``negatives`` N(0, 1) scores."""
    entries = np.union1d(scores, [THRESHOLD])[::-1]
    held = np.isin(entries, scores).astype(np.int64)
    # P(negative > entry), then the probability of each interval between entries.
    above = ndtr(-entries)
    cells = rng.multinomial(negatives, np.diff(np.concatenate(([0.0], above, [1.0]))))
    return CurveSketch.of_counts(
        n=scores.size + negatives,
        threshold=THRESHOLD,
        scores=entries,
        positives_at=held,
        negatives_tied=np.zeros(entries.size, dtype=np.int64),
        negatives_between=cells[:-1],
        negatives_below=int(cells[-1]),
    )


def population_average_precision(mu: float, pi0: float) -> float:
    """Calibrated AP at ``pi0`` of an infinite window (midpoint rule over the positives'
    quantiles: precision at each positive's score, averaged)."""
    grid = (np.arange(100_000) + 0.5) / 100_000
    scores = mu - ndtri(grid)  # positives' scores, descending; their TPR is `grid`
    fpr = ndtr(-scores)
    precision = pi0 * grid / (pi0 * grid + (1.0 - pi0) * fpr)
    return float(precision.mean())


@cache
def _ap_curve(pi0: float) -> tuple[Float64Array, Float64Array]:
    mus = np.linspace(0.0, 4.0, 401)
    return mus, np.array([population_average_precision(m, pi0) for m in mus])


def mu_for(relative_ap: float, pi0: float = 0.005) -> float:
    """The positives' mean that puts calibrated AP at ``relative_ap`` times the healthy one."""
    mus, aps = _ap_curve(pi0)
    target = relative_ap * population_average_precision(HEALTHY_MU, pi0)
    return float(np.interp(target, aps, mus))


EDGE_ROWS = 20_000
"""The worker cuts a model's score bins from its first window with enough rows: 20,000 here."""


def healthy_edges(rng: np.random.Generator, pi: float) -> Float64Array:
    """The bins the worker would cut from a healthy window of :data:`EDGE_ROWS` rows at fraud
    rate ``pi`` (app.metrics.mixture.bin_edges)."""
    frauds = int(rng.binomial(EDGE_ROWS, pi))
    scores = np.concatenate(
        [rng.standard_normal(EDGE_ROWS - frauds), rng.normal(HEALTHY_MU, 1.0, frauds)]
    )
    return bin_edges(scores, THRESHOLD)
