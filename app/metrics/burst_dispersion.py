"""How bursty a reference's frauds are: the dispersion the score-shift tests divide out.

Estimated by :func:`app.metrics.misfit.reference_dispersion` from the reference's own windows;
here what it is and how uncertain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.types import Float64Array


@dataclass(frozen=True)
class Dispersion:
    """How much more the fraud rows' counts vary than independent rows would (quasi-likelihood).

    Frauds come in bursts: a compromised card or terminal makes several frauds a day with
    similar scores. The window's fraud counts are then overdispersed: each bin group's fraud
    count varies ``bins`` times its mean (not once, as for a multinomial sample), and the frauds'
    scores along the tilt (their mean, mostly) ``tilt`` times as much as independent frauds'.
    Legitimate rows stay independent. Each test divides its statistic by what that does to it at
    the window's fraud rate (:class:`Fit`), as quasi-likelihood does for overdispersed counts
    (McCullagh and Nelder 1989, ch. 9; outbreak detection on surveillance counts, Farrington et
    al. 1996, Noufaily et al. 2013). Estimated from the reference's own windows
    (:func:`reference_dispersion`); ``windows`` is how many (0: not estimated, both 1).
    """

    bins: float = 1.0
    tilt: float = 1.0
    windows: int = 0
    bins_spread: tuple[float, ...] = ()
    """What ``bins`` could as well have been: evenly spaced quantiles of its bootstrap over the
    reference's windows (empty: ``bins`` taken as known). The G-test's p-value is averaged over
    them (app/metrics/misfit.py, ``_Misfit.fit``)."""

    def __post_init__(self) -> None:
        if not (
            self.bins >= 1.0
            and self.tilt >= 1.0
            and self.windows >= 0
            and all(b >= 1.0 for b in self.bins_spread)
        ):
            raise InvalidInputError(f"a dispersion is at least 1: {self}")

    def bins_at(self) -> tuple[float, ...]:
        """The bins dispersions the G-test's p-value is averaged over."""
        return self.bins_spread or (self.bins,)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"bins": self.bins, "tilt": self.tilt, "windows": self.windows}


NO_DISPERSION = Dispersion()


SPREAD_POINTS = 20
"""Quantiles of the bins dispersion's bootstrap the G-test's p-value is averaged over."""
_SPREAD_REPLICATES = 400


def moment_dispersion(excess: npt.ArrayLike, fraud_dof: npt.ArrayLike) -> Float64Array:
    """Pearson's moment estimate of a dispersion: 1 plus a test's summed excess over its
    degrees of freedom, divided by the frauds' share of them. Never below 1 (a reference
    quieter than independent rows is chance), and 1 where the frauds carry no degree of
    freedom."""
    over = np.maximum(np.asarray(excess, dtype=np.float64), 0.0)
    dof = np.asarray(fraud_dof, dtype=np.float64)
    carried = dof > 1e-9
    estimate: Float64Array = np.where(carried, 1.0 + over / np.where(carried, dof, 1.0), 1.0)
    return estimate


def bins_spread(excess: Float64Array, fraud_dof: Float64Array) -> tuple[float, ...]:
    """Quantiles of the bins dispersion over the reference's windows drawn with replacement.

    The estimate rests on the frauds' small share of each window's degrees of freedom, under
    the legitimate rows' chi-square noise: with 14 windows of 100 frauds in bursts of 8 scoring
    alike, it read 1.5 to 5.6 from the 10th to the 90th percentile of streams, and the streams
    whose reference happened to read about 1 raised half the false warnings (bench/nowcast.py,
    bursts table). Averaging the p-value over what the windows allow integrates that
    uncertainty out, as the early evidence integrates out its completeness. The draws are
    seeded by the windows' count, so the same reference gives the same spread.
    """
    n = excess.size
    rng = np.random.default_rng(n)
    draws = rng.integers(0, n, size=(_SPREAD_REPLICATES, n))
    replicates = moment_dispersion(excess[draws].sum(axis=1), fraud_dof[draws].sum(axis=1))
    points = (np.arange(SPREAD_POINTS) + 0.5) / SPREAD_POINTS
    return tuple(float(q) for q in np.quantile(replicates, points))
