"""How complete a window's fraud labels are at each look: the chain ladder (reporting-delay
nowcasting, as insurers reserve for claims incurred but not reported).

:func:`develop` estimates, per *cell* (a band of scores; a label's delay depends mostly on
whether the model flagged the row), the share of a window's eventual frauds labelled by look
``k``: the completeness ``F_c(k)``, by the chain-ladder method on recent windows (the
development factor from look ``k`` to ``k + 1`` is the ratio of their cumulative counts summed
over the most recent windows old enough to have both), so reporting that speeds up or slows
down is tracked with a lag of about ``k`` looks, not of a whole horizon; where it keeps
changing speed (the windows before those read a development apart beyond chance) the
estimates carry it on to the window estimated (``Development.trend``). A Poisson bootstrap
over the windows gives replicates of ``F``: windows whose reporting differed from one another
widen every interval built on it. How much more than one by one the labels arrive together
(claims) is :func:`reporting_dispersion`.

The windows' arrivals by look are :class:`app.metrics.reporting.Arrivals`; what the labels so
far say a window's complete labels will show is :mod:`app.metrics.early_estimate`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.types import Float64Array, Int64Array

DRIFT_Z = 1.96
"""The windows behind a development and the windows before them differ beyond chance when
their log completeness is this many bootstrap standard deviations apart: steady reporting then
carries no estimate on in about 19 cells of 20 (a difference under noise alone always exceeds
its variance in a third of them)."""


@dataclass(frozen=True)
class Development:
    """Per cell, the share of a window's eventual frauds labelled by each look.

    ``completeness[c, k]`` is F_c(k) (1 at the horizon; NaN where no window old enough was
    there to tell); ``replicates[r, c, k]`` the same from windows resampled (Poisson bootstrap);
    ``windows[k]`` how many windows each development factor from ``k`` to ``k + 1`` rests on;
    ``trend[r, c, k]`` how far log F_c(k) of a window at look ``k`` lies from the chain
    ladder's because reporting keeps changing speed, row 0 for the estimate and one per
    replicate (0 where the windows before them agree within chance:
    :func:`_speed_trend`); ``dispersion`` how much more the complete windows' arrivals varied
    than Poisson arrivals would (:func:`reporting_dispersion`, at least 1), and
    ``cell_dispersion[c]`` the same of each cell's arrivals alone.
    """

    horizon: int
    completeness: Float64Array
    replicates: Float64Array
    windows: Int64Array
    trend: Float64Array
    dispersion: float = 1.0
    cell_dispersion: Float64Array | None = None

    def at(self, look: int) -> Completeness:
        """F per cell at ``look`` (capped at the horizon), with its replicates."""
        k = min(max(look, 0), self.horizon)
        return Completeness(
            look,
            self.completeness[:, k],
            self.replicates[:, :, k],
            self.trend[:, :, k],
            self.dispersion,
            self.cell_dispersion,
        )


@dataclass(frozen=True)
class Completeness:
    """F per cell at one look: the estimate (NaN: unknown), its bootstrap replicates, and how
    far a window's log F at this look lies from them because reporting keeps changing speed
    (:attr:`Development.trend`: row 0 for the estimate, then one per replicate; None: none)."""

    look: int
    value: Float64Array
    replicates: Float64Array
    trend: Float64Array | None = None
    dispersion: float = 1.0
    """How much burstier than Poisson the labels arrive (:attr:`Development.dispersion`)."""
    cell_dispersion: Float64Array | None = None
    """The same of each cell's labels alone (None: not read)."""


def develop(
    cumulative: npt.ArrayLike,
    ages: npt.ArrayLike,
    *,
    recent: int,
    replicates: int,
    seed: int,
) -> Development:
    """Chain-ladder completeness from windows' cumulative arrivals.

    Parameters
    ----------
    cumulative:
        Shape (windows, cells, horizon + 1): each window's fraud labels per cell arrived by
        each look (:meth:`Arrivals.cumulative`), oldest window first.
    ages:
        Each window's age in looks at the moment of estimation: its counts from look
        ``age + 1`` on are not known yet (a mature window's age is at least the horizon).
    recent:
        The development factor from look ``k`` to ``k + 1`` is taken over the ``recent``
        newest windows at least ``k + 1`` looks old.
    replicates, seed:
        The Poisson bootstrap over windows.
    """
    counts = np.asarray(cumulative, dtype=np.float64)
    age = np.asarray(ages, dtype=np.int64)
    if counts.ndim != 3 or counts.shape[0] != age.size:
        raise InvalidInputError("cumulative arrivals must be (windows, cells, looks), one age each")
    windows, _, looks = counts.shape
    horizon = looks - 1
    if recent < 1 or replicates < 1:
        raise InvalidInputError("recent windows and replicates must be positive")
    # selection[k, j]: window j is one of the `recent` newest at least k + 1 looks old;
    # before[k, j]: one of the `recent` before those (how fast the speed changes, below).
    selection = np.zeros((horizon, windows))
    before = np.zeros((horizon, windows))
    for k in range(horizon):
        old_enough = np.flatnonzero(age >= k + 1)
        selection[k, old_enough[-recent:]] = 1.0
        before[k, old_enough[-2 * recent : -recent]] = 1.0
    rng = np.random.default_rng(seed)
    weights = np.vstack([np.ones(windows), rng.poisson(1.0, (replicates, windows))])
    complete = _chain_ladder(counts, selection, weights)
    # Reporting that changes speed: the same development from the windows before says how fast
    # it changes, and the window estimated develops weeks after the chain ladder's windows did,
    # so its F is carried on (``Development.trend``). Against the `recent` windows before, not
    # between halves of the recent ones: twice the distance and twice the windows a side, a
    # third of the noise for the same change (at 1,000 frauds a window and reporting a third
    # faster over 144 days, the halves' difference was about its own standard deviation).
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(complete) - np.log(_chain_ladder(counts, before, weights))
    lead = _lead(complete[0], selection, before, age.astype(np.float64))
    mature = counts[age >= horizon]  # the windows whose reporting is complete
    return Development(
        horizon=horizon,
        completeness=complete[0],
        replicates=complete[1:],
        windows=selection.sum(axis=1).astype(np.int64),
        trend=_speed_trend(shift, lead),
        dispersion=reporting_dispersion(mature, complete[0]),
        cell_dispersion=np.array(
            [reporting_dispersion(mature[:, [c]], complete[0][[c]]) for c in range(counts.shape[1])]
        ),
    )


def _speed_trend(shift: Float64Array, lead: Float64Array) -> Float64Array:
    """Per replicate, cell and look: how far a window's log F lies from the chain ladder's.

    ``shift[r]`` is log F of the chain ladder's windows less that of the windows before them
    (row 0 the estimate, then the bootstrap's replicates); ``lead`` how many of their distances
    the window estimated develops ahead of the chain ladder's windows (:func:`_lead`). Where
    the two differ beyond chance (DRIFT_Z of the bootstrap's standard deviations) the speed
    keeps changing, and F moves on by ``lead`` times the shift, shrunk by what chance makes of
    it (a shift kept for being large is too large by about that). Each replicate moves by its
    own shift, so the extrapolation's uncertainty reaches the intervals. Elsewhere 0: steady
    reporting is not extrapolated from noise.
    """
    known = np.isfinite(shift[1:])
    seen = np.maximum(known.sum(axis=0), 1)
    spread = np.where(known, shift[1:], 0.0)
    chance = (spread**2).sum(axis=0) / seen - (spread.sum(axis=0) / seen) ** 2
    # A half with no label by a look (F 0) says nothing of the speed there.
    measured = np.where(np.isfinite(shift[0]), shift[0], 0.0) ** 2
    significant = measured > DRIFT_Z**2 * chance
    shrink = np.where(significant, 1.0 - chance / np.where(significant, measured, 1.0), 0.0)
    trend: Float64Array = np.where(np.isfinite(shift), shift, 0.0) * (shrink * lead)[None]
    return trend


def _lead(
    completeness: Float64Array, selection: Float64Array, before: Float64Array, age: Float64Array
) -> Float64Array:
    """Per cell and look ``k``: how far ahead of the chain ladder's windows a window at look
    ``k`` develops, in units of the distance between them and the windows before them.

    The factor from ``j`` to ``j + 1`` is read off windows of mean age A_j, which took that
    step A_j - k looks before the window at look ``k`` will; the windows before took it S_j
    looks before them. Over the factors still ahead, each weighted by how much of the labels
    it brings (log F(j + 1) - log F(j): a changing speed shows in a factor as much as it
    develops): sum w (A - k) / sum w S.
    """
    mean_age = selection @ age / np.maximum(selection.sum(axis=1), 1.0)
    apart = before @ age / np.maximum(before.sum(axis=1), 1.0) - mean_age
    apart = np.where(before.sum(axis=1) > 0, apart, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = np.diff(np.log(completeness), axis=1)
    w = np.where(np.isfinite(steps), steps, 0.0)
    k = np.arange(completeness.shape[1], dtype=np.float64)
    ahead = _from_each(w * mean_age[None, :]) - k[None, :] * _from_each(w)
    span = _from_each(w * apart[None, :])
    lead: Float64Array = np.divide(ahead, span, out=np.zeros_like(span), where=span > 0)
    return lead


def _from_each(values: Float64Array) -> Float64Array:
    """Per row, the sum of ``values[:, j]`` over j >= k for each k up to the horizon (0 there)."""
    tail = np.cumsum(values[:, ::-1], axis=1)[:, ::-1]
    out: Float64Array = np.concatenate([tail, np.zeros((values.shape[0], 1))], axis=1)
    return out


def reporting_dispersion(cumulative: Float64Array, completeness: Float64Array) -> float:
    """How much more complete windows' arrivals vary than Poisson arrivals would (never under 1).

    The scale of the over-dispersed Poisson chain ladder (England and Verrall 2002, "Stochastic
    claims reserving in general insurance"): each window's arrivals per look, against what its
    totals per cell and the completeness expect, as Pearson's statistic over its degrees of
    freedom. Labels that arrive together (a cardholder disputes all of a card's frauds in one
    claim) vary as bursts do, and so do the frauds still hidden in a young window: the
    estimates draw them in bursts of this size. A claim covers the card's frauds above and
    below the threshold, so the arrivals are summed over the cells first (per cell, a claim
    split between two cells would count as two smaller bursts). Reporting whose speed changed
    makes the complete windows' arrivals differ from the completeness too, and widens them the
    same way.

    ``cumulative``: (windows, cells, looks) arrivals of windows at least a horizon old;
    ``completeness``: (cells, looks) F, 1 at the horizon.
    """
    if not cumulative.shape[0] or not np.isfinite(completeness).all():
        return 1.0
    arrived = np.diff(cumulative, axis=2, prepend=0.0)
    totals = cumulative[:, :, -1]
    expected = totals[:, :, None] * np.diff(completeness, axis=1, prepend=0.0)[None, :, :]
    arrived, expected = arrived.sum(axis=1), expected.sum(axis=1)  # (windows, looks)
    entries = expected > 0
    # Fitted, as in the chain ladder's triangle: a total per window, a share per look.
    fitted = int((totals.sum(axis=1) > 0).sum()) + int(entries.any(axis=0).sum()) - 1
    freedom = int(entries.sum()) - fitted
    if freedom <= 0:
        return 1.0
    pearson = float(((arrived - expected)[entries] ** 2 / expected[entries]).sum())
    return max(1.0, pearson / freedom)


def _chain_ladder(
    counts: Float64Array, selection: Float64Array, weights: Float64Array
) -> Float64Array:
    """F per (replicate, cell, look) from windows' cumulative ``counts``, each factor from k to
    k + 1 over the windows ``selection[k]`` picks, weighted per replicate by ``weights``."""
    horizon = counts.shape[2] - 1
    later = np.einsum("kj,jck->jck", selection, counts[:, :, 1:]) if horizon else counts[:, :, :0]
    earlier = np.einsum("kj,jck->jck", selection, counts[:, :, :-1]) if horizon else later
    numerator = np.einsum("rj,jck->rck", weights, later)
    denominator = np.einsum("rj,jck->rck", weights, earlier)
    with np.errstate(divide="ignore", invalid="ignore"):
        # 1/lambda: nothing arrived by k while some did by k + 1 gives 0 (F(k) = 0: no label is
        # expected that early); nothing arrived by either gives 1 (nothing to develop).
        inverse = np.where(numerator > 0, denominator / numerator, 1.0)
    unseen = selection.sum(axis=1) == 0  # no window old enough: F unknown from there down
    inverse[:, :, unseen] = np.nan
    tail = np.cumprod(inverse[:, :, ::-1], axis=2)[:, :, ::-1]
    ones = np.ones((weights.shape[0], counts.shape[1], 1))
    out: Float64Array = np.concatenate([tail, ones], axis=2)
    return out
