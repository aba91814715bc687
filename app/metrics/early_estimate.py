"""What a window's complete labels will show, from the labels it has so far.

:func:`estimate_window` scales a window's labels up (:mod:`app.metrics.reporting` gives how
complete each cell's labels are at the window's look): in cell ``c`` its eventual frauds are
Poisson(mu_c), its labels so far Poisson(mu_c F_c), and mu_c has a Gamma prior centred on the
reference's share of the cell times the scale the labels so far imply (where they are nearly
complete: the flagged rows, after the investigators' feedback), worth ``prior_frauds`` frauds
observed: a weak prior, which the labels override as they arrive. Draws of the hidden frauds,
placed in the cell's bins as the reference and the arrivals so far place them, give the
window's eventual fraud rate, precision and recall at the threshold and calibrated average
precision, each with an interval (the completeness' bootstrap replicates are drawn through
too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.null_model import grouped_calibrated_ap
from app.metrics.reporting import Cells, Completeness
from app.metrics.types import BoolArray, Float64Array, Interval


@dataclass(frozen=True)
class EarlyEstimate:
    """What a window's complete labels are expected to show, from its labels so far.

    ``values`` are point estimates of :data:`ESTIMATED`; ``intervals`` the central ``level``
    intervals of the same quantities over the draws (the hidden frauds, the completeness'
    replicates); ``undefined`` says why a value is None.
    """

    look: int
    frauds_so_far: int
    values: dict[str, float | None]
    intervals: dict[str, Interval | None]
    undefined: dict[str, str] = field(default_factory=dict)

    @classmethod
    def unavailable(cls, look: int, frauds_so_far: int, reason: str) -> EarlyEstimate:
        """No estimate, for ``reason``."""
        return cls(
            look,
            frauds_so_far,
            dict.fromkeys(ESTIMATED),
            dict.fromkeys(ESTIMATED),
            dict.fromkeys(ESTIMATED, reason),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: each quantity's value and ``<name>_ci``."""
        out: dict[str, Any] = {"look": self.look, "frauds_so_far": self.frauds_so_far}
        for name in ESTIMATED:
            interval = self.intervals.get(name)
            out[name] = self.values.get(name)
            out[f"{name}_ci"] = list(interval) if interval is not None else None
        out["undefined"] = dict(self.undefined)
        return out


ESTIMATED = ("frauds_total", "pi", "precision", "recall", "average_precision")
"""What :func:`estimate_window` estimates: the eventual frauds, the fraud rate, precision and
recall at the threshold, calibrated average precision at pi0."""


@dataclass(frozen=True)
class EstimateSettings:
    """How :func:`estimate_window` estimates.

    ``ap_shift`` is added to the binned calibrated AP (the exact-minus-binned AP of the
    reference: binning ties the rows of a bin); ``prior_frauds`` is how many frauds observed a
    cell's Gamma prior counts as (its shape); ``shape_strength`` the pseudo-frauds with which
    the reference's shape places a cell's hidden frauds in its bins.
    """

    pi0: float
    ap_shift: float
    prior_frauds: float
    shape_strength: float
    dispersion: float = 1.0
    """How much burstier than independent the frauds are (:func:`app.metrics.tilt.dispersion`,
    at least 1): frauds arrive, and hide, in bursts of about this many."""
    level: float = 0.95


@dataclass(frozen=True)
class LabelsSoFar:
    """A window's fraud labels per bin arrived by a look, beside its rows per bin."""

    frauds: Float64Array
    rows: Float64Array

    @classmethod
    def of(cls, frauds: npt.ArrayLike, rows: npt.ArrayLike) -> LabelsSoFar:
        """Checked: one entry per bin each, never more frauds than rows in a bin."""
        o = np.asarray(frauds, dtype=np.float64)
        n = np.asarray(rows, dtype=np.float64)
        if o.shape != n.shape or o.ndim != 1:
            raise InvalidInputError("frauds and rows need one entry per bin")
        if (o > n).any() or (o < 0).any():
            raise InvalidInputError("a bin has more labelled frauds than rows, or fewer than 0")
        return cls(o, n)


def estimate_window(
    labels: LabelsSoFar,
    cells: Cells,
    completeness: Completeness,
    settings: EstimateSettings,
    *,
    seed: int,
) -> EarlyEstimate:
    """Estimate a window's eventual fraud labels from those arrived by ``completeness.look``
    (F per cell at that look: :meth:`Development.at`)."""
    o, n = labels.frauds, labels.rows
    look = completeness.look
    if o.shape != cells.of_bin.shape:
        raise InvalidInputError("the labels and the cells need one entry per bin")
    so_far = int(o.sum())
    count = cells.count
    o_cell = np.bincount(cells.of_bin, weights=o, minlength=count).astype(np.float64)
    shares = cells.shares()
    f = np.nan_to_num(completeness.value, nan=0.0)
    reps = np.nan_to_num(completeness.replicates, nan=0.0)
    if n.sum() <= 0:
        return EarlyEstimate.unavailable(look, so_far, "the window has no rows")
    if so_far == 0:
        # The prior's scale is what the labels so far imply: with none, it is nothing, and the
        # estimate would claim no fraud at all (pi 0 in [0, 0]) where it knows nothing yet.
        return EarlyEstimate.unavailable(
            look, so_far, "no fraud label has arrived yet: there is nothing to scale up"
        )
    if (shares * f).sum() <= 0:
        return EarlyEstimate.unavailable(
            look, so_far, "no fraud label is expected this early (none arrived so soon before)"
        )
    if so_far > 0:
        # A replicate that expects no label by this look (none of its windows had one so soon)
        # could not have produced the labels that came: it is left out, as the early evidence
        # leaves it out (TiltTest.evidence). Kept, it scaled them up to every row a fraud.
        possible = (shares[None, :] * reps).sum(axis=1) > 0
        reps = reps[possible] if possible.any() else f[None, :]
    rng = np.random.default_rng(seed)
    # Within a cell, the hidden frauds fall where the cell's frauds fall: the reference's shape,
    # updated by the arrivals so far (labels within a cell arrive at one speed, so they are a
    # fair sample of where its frauds score).
    cell_share = shares[cells.of_bin]
    inside = np.divide(
        cells.reference_shares, cell_share, out=np.zeros_like(o), where=cell_share > 0
    )
    # Frauds in bursts count as bursts (quasi-Poisson): a burst of three disputed together says
    # about as much as one fraud, and hides as one.
    phi = max(settings.dispersion, 1.0)
    weights = settings.shape_strength * inside + o / phi
    weight_sum = np.bincount(cells.of_bin, weights=weights, minlength=count)[cells.of_bin]
    within = np.divide(weights, weight_sum, out=np.zeros_like(weights), where=weight_sum > 0)

    # A cell's unlabelled rows bound its hidden frauds (a replicate whose completeness is near
    # 0 everywhere would otherwise scale a few labels up without bound).
    room = np.bincount(cells.of_bin, weights=n - o, minlength=count).astype(np.float64)
    # The point estimate: each cell's posterior mean of its hidden frauds.
    prior = _prior(np.array([o_cell.sum()]), shares, f[None, :])[0]
    # The prior is a Gamma of mean ``prior`` and shape ``prior_frauds`` (as much as that many
    # frauds observed), so the posterior mean is (a + O) / (a / m + F).
    shape, rate = _gamma_prior(prior, settings)
    mean = (shape + o_cell) / (rate + f)
    hidden_mean = np.minimum(mean * (1.0 - f), room)
    point = np.minimum(o + hidden_mean[cells.of_bin] * within, n)
    # The draws: a completeness replicate, the cell's Poisson mean from its posterior, the
    # hidden frauds, placed in the cell's bins. The labels so far set the prior's scale, and
    # they are a Poisson count (with one fraud labelled the window may hold a handful): each
    # replicate draws the scale from the count's posterior (in bursts, as everything here).
    labelled = np.asarray(phi * rng.gamma(so_far / phi + 0.5, size=reps.shape[0]), np.float64)
    shapes_r, rates_r = _gamma_prior(_prior(labelled, shares, reps), settings)
    mu = rng.gamma((shapes_r + o_cell[None, :]) / phi, 1.0 / (rates_r + reps))
    bursts = rng.poisson(np.minimum(mu * np.clip(1.0 - reps, 0.0, 1.0), room[None, :] / phi))
    # Where in its cell a hidden fraud scores is uncertain too (a model that got worse puts them
    # lower than the reference did, and a few arrivals say little): each replicate draws the
    # cell's shape from its Dirichlet posterior (the reference's shape as pseudo-frauds, plus
    # the arrivals), then places the hidden frauds on it.
    hidden = np.zeros((reps.shape[0], o.size))
    for c in range(count):
        members = np.flatnonzero(cells.of_bin == c)
        if not members.size or weights[members].sum() <= 0:
            continue
        alpha = np.maximum(weights[members], 1e-9)
        shapes = rng.gamma(alpha, size=(reps.shape[0], members.size))
        shapes /= shapes.sum(axis=1, keepdims=True)
        hidden[:, members] = phi * rng.multinomial(bursts[:, c], shapes)
    drawn = np.minimum(o[None, :] + hidden, n[None, :])
    values, _ = _summaries(point[None, :], n, cells.flagged, settings)
    _, intervals = _summaries(drawn, n, cells.flagged, settings)
    undefined = {name: _why_undefined(name) for name in ESTIMATED if values[name] is None}
    return EarlyEstimate(look, so_far, values, intervals, undefined)


def _gamma_prior(
    mean: Float64Array, settings: EstimateSettings
) -> tuple[Float64Array, Float64Array]:
    """The Gamma prior's shape and rate on each cell's eventual frauds, of mean ``mean``: as
    much as ``prior_frauds`` frauds observed, whatever the cell's size.

    Measured on bench/early_pages.py, the alternatives were worse. A prior worth a share of the
    cell's frauds (5%: shape 0.05 m) was a point mass at none in a cell expecting a fraud or
    two, so a small window with no chargeback yet a week in drew no hidden fraud and its
    interval collapsed on the labels so far (47% of the AP intervals of the 25-fraud bench's
    smallest windows covered); in a big one it was as strong as 25 frauds, held a broken
    model's missed cells to the reference's split and read 2% too little fraud a week after the
    break (its fraud-rate intervals covered 84% at 1,000 frauds a window, 54% the day after).
    """
    shape = np.full_like(mean, settings.prior_frauds)
    return shape, shape / mean


def _prior(labelled: Float64Array, shares: Float64Array, reps: Float64Array) -> Float64Array:
    """Each replicate's prior mean per cell: the reference's share times the scale that
    ``labelled`` frauds so far (one number a replicate) imply at its completeness."""
    expected = np.maximum((shares[None, :] * reps).sum(axis=1, keepdims=True), 1e-300)
    prior: Float64Array = np.maximum(labelled[:, None] / expected * shares[None, :], 1e-9)
    return prior


def _why_undefined(name: str) -> str:
    if name == "precision":
        return "no row is flagged at the threshold"
    if name in ("recall", "average_precision"):
        return "no fraud is expected in this window"
    return "the window has no rows"


def _summaries(
    frauds: Float64Array, rows: Float64Array, flagged: BoolArray, settings: EstimateSettings
) -> tuple[dict[str, float | None], dict[str, Interval | None]]:
    """The estimated quantities of each row of per-bin fraud counts: the first row's values,
    and the central ``level`` interval over the rows."""
    total = frauds.sum(axis=1)
    legit = rows[None, :] - frauds
    caught = frauds[:, flagged].sum(axis=1)
    flagged_rows = float(rows[flagged].sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        quantities = {
            "frauds_total": total,
            "pi": total / rows.sum(),
            "precision": caught / flagged_rows if flagged_rows > 0 else np.full(total.size, np.nan),
            "recall": np.where(total > 0, caught / total, np.nan),
            # Highest bin first, each bin one tie group.
            "average_precision": grouped_calibrated_ap(
                frauds[:, ::-1], legit[:, ::-1], legit.sum(axis=1), settings.pi0
            )
            + settings.ap_shift,
        }
    values: dict[str, float | None] = {}
    intervals: dict[str, Interval | None] = {}
    tail = (1.0 - settings.level) / 2.0
    for name, draws in quantities.items():
        first = float(draws[0])
        values[name] = first if np.isfinite(first) else None
        finite = draws[np.isfinite(draws)]
        if finite.size < max(draws.size * (1.0 - tail), 1):
            intervals[name] = None
        else:
            lo, hi = np.quantile(finite, [tail, 1.0 - tail])
            intervals[name] = (float(lo), float(hi))
    return values, intervals
