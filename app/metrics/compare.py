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

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.metrics._replicates import Resampled, percentile_interval, range_nodes
from app.metrics._validation import check_pi0
from app.metrics.errors import InvalidInputError
from app.metrics.sketch import CurveSketch
from app.metrics.skew import average_precision_at_skew, integrated_auc_pr

_AP = "average_precision"


@dataclass(frozen=True)
class Difference:
    """AP of both models at ``pi`` (or over [pi_lo, pi_hi]) and challenger minus champion."""

    champion: float
    challenger: float
    difference: float
    interval: tuple[float, float] | None
    """Percentile interval of the difference; None if too many replicates were undefined."""


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
    a = Resampled(champion, rng, replicates, max_entries)
    b = Resampled(challenger, rng, replicates, max_entries)
    # The ROC points once per model (each use would otherwise recompute them from the sketch).
    curve_a, curve_b = champion.roc_points(), challenger.roc_points()
    out = []
    for prior in priors:
        pi = check_pi0(prior)
        exact_a = average_precision_at_skew(curve_a, pi)
        exact_b = average_precision_at_skew(curve_b, pi)
        spread = b.replicate_values(_AP, pi) - a.replicate_values(_AP, pi)
        merged = b.merged_value(_AP, pi) - a.merged_value(_AP, pi)
        interval = percentile_interval(spread, (exact_b - exact_a) - merged, level)
        out.append(Difference(exact_a, exact_b, exact_b - exact_a, interval))
    ranged = None
    if pi_range is not None:
        lo, hi = pi_range
        if not 0.0 <= lo < hi <= 1.0:
            raise InvalidInputError(f"need 0 <= pi_lo < pi_hi <= 1, got [{lo}, {hi}]")
        area_a = integrated_auc_pr(curve_a, lo, hi)
        area_b = integrated_auc_pr(curve_b, lo, hi)
        quadrature = range_nodes(lo, hi, None)
        assert quadrature is not None  # unweighted: the weights are positive
        spread_sum = np.zeros(replicates)
        merged_sum = 0.0
        for p, w in zip(*quadrature, strict=True):
            spread_sum += w * (b.replicate_values(_AP, p) - a.replicate_values(_AP, p))
            merged_sum += w * (b.merged_value(_AP, p) - a.merged_value(_AP, p))
        interval = percentile_interval(spread_sum, (area_b - area_a) - merged_sum, level)
        ranged = Difference(area_a, area_b, area_b - area_a, interval)
    return out, ranged


def window_difference_interval(
    champion: float,
    champion_ci: tuple[float, float],
    challenger: float,
    challenger_ci: tuple[float, float],
) -> tuple[float, float]:
    """Interval of challenger - champion from each model's own interval (MOVER).

    Zou & Donner (2008), "Construction of confidence limits about effect measures": for the
    difference of two independent estimates, each end is the point difference moved by the
    root sum of squares of the two half-widths on the sides that move it that way. It keeps the
    stored intervals' asymmetry (AP near 0 or 1) and needs no resampling, so a year of windows
    costs nothing; the stored intervals are the worker's bootstrap ones. For shadow traffic (the
    same rows) the errors are positively correlated and the interval errs on the wide side.
    """
    difference = challenger - champion
    down = math.hypot(challenger - challenger_ci[0], champion_ci[1] - champion)
    up = math.hypot(challenger_ci[1] - challenger, champion - champion_ci[0])
    return difference - down, difference + up
