"""What a window's complete labels will show, from the labels it has so far.

:func:`estimate_window` scales a window's labels up (:mod:`app.metrics.reporting` gives how
complete each cell's labels are at the window's look): in cell ``c`` its eventual frauds are
Poisson(mu_c), its labels so far Poisson(mu_c F_c), and mu_c has a prior worth one fraud
observed, a mixture of two exponentials: one centred on the reference's share of the cell times
the scale the labels so far imply (where they are nearly complete: the flagged rows, after the
investigators' feedback), and a vague one for a model that no longer splits its frauds as the
reference did (:func:`_prior_rates`). Draws of the hidden frauds,
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

from app.metrics.development import Completeness
from app.metrics.errors import InvalidInputError
from app.metrics.null_model import grouped_calibrated_ap
from app.metrics.reporting import Cells
from app.metrics.types import BoolArray, Float64Array, Int64Array, Interval


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
    bursts: float = 1.0
    """How many frauds a burst counted as (1: independent frauds)."""

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
        out["bursts"] = self.bursts
        return out


ESTIMATED = ("frauds_total", "pi", "precision", "recall", "average_precision")
"""What :func:`estimate_window` estimates: the eventual frauds, the fraud rate, precision and
recall at the threshold, calibrated average precision at pi0."""


@dataclass(frozen=True)
class EstimateSettings:
    """How :func:`estimate_window` estimates.

    ``ap_shift`` is added to the binned calibrated AP (the exact-minus-binned AP of the
    reference: binning ties the rows of a bin); ``vague_odds`` the odds, before any label, that
    a cell's frauds follow the vague prior rather than the reference's split
    (:func:`_prior_rates`); ``shape_strength`` the pseudo-frauds with which the reference's
    shape places a cell's hidden frauds in its bins.
    """

    pi0: float
    ap_shift: float
    vague_odds: float
    shape_strength: float
    dispersion: float = 1.0
    """How much burstier than independent the frauds score (:func:`app.metrics.tilt.dispersion`,
    at least 1); the estimate counts a burst as the larger of it and how much the labels arrive
    together (:attr:`app.metrics.development.Completeness.dispersion`)."""
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
    f, reps = carried_on(completeness)
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
    phi, phi_cell = _burst_sizes(settings.dispersion, completeness, cells)
    weights = settings.shape_strength * inside + o / phi_cell[cells.of_bin]
    weight_sum = np.bincount(cells.of_bin, weights=weights, minlength=count)[cells.of_bin]
    within = np.divide(weights, weight_sum, out=np.zeros_like(weights), where=weight_sum > 0)

    # A cell's unlabelled rows bound its hidden frauds (a replicate whose completeness is near
    # 0 everywhere would otherwise scale a few labels up without bound).
    room = np.bincount(cells.of_bin, weights=n - o, minlength=count).astype(np.float64)
    # The point estimate: each cell's posterior mean of its hidden frauds. Under an exponential
    # prior of rate b the posterior is a Gamma of shape 1 + O and rate b + F; the two priors'
    # posteriors are mixed by how well each foretold the labels so far.
    split, vague = _prior_rates(_prior(np.array([o_cell.sum()]), shares, f[None, :])[0], shares)
    odds = _vague_odds((split, vague), o_cell, f, settings.vague_odds, phi_cell)
    mean = (1.0 + o_cell) * (1.0 / (split + f) + odds / (vague + f)) / (1.0 + odds)
    hidden_mean = np.minimum(mean * (1.0 - f), room)
    point = o + _within_room(hidden_mean[cells.of_bin] * within, within, n - o, cells.of_bin)
    # The draws: a completeness replicate, the cell's Poisson mean from its posterior, the
    # hidden frauds, placed in the cell's bins. The labels so far set the prior's scale, and
    # they are a Poisson count (with one fraud labelled the window may hold a handful): each
    # replicate draws the scale from the count's posterior (in bursts, as everything here).
    labelled = np.asarray(phi * rng.gamma(so_far / phi + 0.5, size=reps.shape[0]), np.float64)
    split_r, vague_r = _prior_rates(_prior(labelled, shares, reps), shares)
    odds_r = _vague_odds((split_r, vague_r), o_cell[None, :], reps, settings.vague_odds, phi_cell)
    rate_r = np.where(rng.random(reps.shape) * (1.0 + odds_r) < odds_r, vague_r, split_r)
    mu = rng.gamma((1.0 + o_cell[None, :]) / phi_cell, 1.0 / (rate_r + reps))
    bursts = rng.poisson(np.minimum(mu * np.clip(1.0 - reps, 0.0, 1.0), room[None, :] / phi_cell))
    # Where in its cell a hidden fraud scores is uncertain too (a model that got worse puts them
    # lower than the reference did, and a few arrivals say little): each replicate draws the
    # cell's shape from its Dirichlet posterior (the reference's shape as pseudo-frauds, plus
    # the arrivals), then places the hidden frauds on it.
    hidden = np.zeros((reps.shape[0], o.size))
    shapes = np.zeros_like(hidden)
    for c in range(count):
        members = np.flatnonzero(cells.of_bin == c)
        if not members.size or weights[members].sum() <= 0:
            continue
        alpha = np.maximum(weights[members], 1e-9)
        cell_shapes = rng.gamma(alpha, size=(reps.shape[0], members.size))
        cell_shapes /= cell_shapes.sum(axis=1, keepdims=True)
        shapes[:, members] = cell_shapes
        hidden[:, members] = phi_cell[c] * rng.multinomial(bursts[:, c], cell_shapes)
    drawn = o[None, :] + _within_room(hidden, shapes, (n - o)[None, :], cells.of_bin)
    values, _ = _summaries(point[None, :], n, cells.flagged, settings)
    _, intervals = _summaries(drawn, n, cells.flagged, settings)
    undefined = {name: _why_undefined(name) for name in ESTIMATED if values[name] is None}
    return EarlyEstimate(look, so_far, values, intervals, undefined, bursts=phi)


def _within_room(
    hidden: Float64Array, shapes: Float64Array, room: Float64Array, of_bin: Int64Array
) -> Float64Array:
    """``hidden`` frauds per bin (the last axis) with what overflows a bin's unlabelled rows
    (``room``) moved to its cell's other bins that have room, in proportion to ``shapes``.

    A cell's hidden frauds are placed on its bins by shape alone, and the top bins hold a few
    rows that may all be labelled frauds already: cut at each bin's rows (as before), 4-5% of
    the hidden frauds of a 25-fraud window were lost, most of them where the scores are
    highest, and calibrated AP read low (bench/early_pages.py). A cell with no room left keeps
    what it has.
    """
    placed = np.minimum(hidden, room)
    cells = int(of_bin.max()) + 1 if of_bin.size else 0
    onto = np.eye(cells)[of_bin]  # bins x cells: sums a cell's bins, spreads a cell's total
    excess = (hidden - placed) @ onto
    for _ in range(of_bin.size):
        free = room - placed
        open_shapes = np.where(free > 0, shapes, 0.0)
        totals = open_shapes @ onto
        if not ((excess > 1e-9) & (totals > 0)).any():
            break
        share = np.divide(
            open_shapes, totals @ onto.T, out=np.zeros_like(open_shapes), where=totals @ onto.T > 0
        )
        added = np.minimum((excess @ onto.T) * share, free)
        placed = placed + added
        excess = excess - added @ onto
    return placed


def carried_on(completeness: Completeness) -> tuple[Float64Array, Float64Array]:
    """F per cell and its replicates (0 where unknown), carried on where reporting keeps
    changing speed: this window develops weeks after the windows behind F did, at the speed
    reporting has moved on to (:attr:`Development.trend`; the estimates only, the early
    evidence keeps the chain ladder's F). At 1,000 frauds a window with reporting a third
    faster over the stream, a week-old window's fraud-rate interval covered 87.2% widened by
    the speed's change, 94.0% carried on by it (bench/early_pages.py, 30 streams)."""
    f = np.nan_to_num(completeness.value, nan=0.0)
    reps = np.nan_to_num(completeness.replicates, nan=0.0)
    if completeness.trend is not None:
        moved = np.exp(completeness.trend)
        f = np.minimum(f * moved[0], 1.0)
        reps = np.minimum(reps * moved[1:], 1.0)
    return f, reps


def _burst_sizes(
    score_dispersion: float, completeness: Completeness, cells: Cells
) -> tuple[float, Float64Array]:
    """How many frauds a burst counts as: the window's, and per cell.

    Frauds in bursts count as bursts (quasi-Poisson): a burst of three disputed together says
    about as much as one fraud, and hides as one. Bursts show in two ways: frauds that score
    alike (the reference's dispersion) and labels that arrive together (the complete windows'
    arrivals, :func:`app.metrics.development.reporting_dispersion`); the larger counts. At 25
    frauds a window in claims of about three frauds, a week-old window's calibrated AP interval
    covered 89.4% with the first alone, 91.1% with both (bench/early_pages.py, 90 streams).

    Except where investigators review the rows one by one: a flagged cell's hidden frauds are
    the ones nobody reviewed, a thinned sample of any burst, and vary as its own labels'
    arrivals do (in the bench's bursts a flagged cell's hidden count's squared error over its
    mean was 1.1-1.3, a missed cell's 5.3-6.5). With the window's dispersion on both,
    precision's interval at 1,000 frauds a window in bursts covered 99.6%, too wide; with the
    flagged cells' own, 96.2%.
    """
    phi = max(score_dispersion, completeness.dispersion, 1.0)
    own = completeness.cell_dispersion
    own_phi = np.maximum(own, 1.0) if own is not None else np.full(cells.count, phi)
    per_cell: Float64Array = np.where(cells.flagged_cells(), own_phi, phi)
    return phi, per_cell


def _prior_rates(mean: Float64Array, shares: Float64Array) -> tuple[Float64Array, Float64Array]:
    """The rates of the two exponential priors on a cell's eventual frauds (each worth one fraud
    observed): the reference's split (mean ``mean``), and vague (mean: all the window's expected
    frauds, as if any share of them could fall in the cell).

    Measured on bench/early_pages.py, one prior alone was worse. Around the split alone, worth
    5% of the cell's frauds (a Gamma of shape 0.05 m), it was a point mass at none in a cell
    expecting a fraud or two, so a small window with no chargeback yet a week in drew no
    hidden fraud and its interval collapsed on the labels so far (47% of the AP intervals of
    the 25-fraud bench's smallest windows covered); in a big model it weighed as much as 25
    frauds and held a broken model's missed cells to the reference's split (at 1,000 frauds a
    window its fraud-rate intervals covered 87% a week after the break, 54% the day after).
    Worth one fraud, around the split alone, it held a badly broken model's few chargebacks
    to the split (the demo's broken days read a third too little fraud).
    """
    scale = mean / np.maximum(shares, 1e-300)
    return 1.0 / mean, 1.0 / np.maximum(scale, mean)


def _vague_odds(
    rates: tuple[Float64Array, Float64Array],
    o: Float64Array,
    f: Float64Array,
    prior_odds: float,
    phi: Float64Array,
) -> Float64Array:
    """The posterior odds of the vague prior against the split (``rates``: their rates),
    ``prior_odds`` times the ratio of their marginal likelihoods of the ``o`` labels so far at
    completeness ``f`` (negative binomial, in bursts of ``phi``; the terms both share left
    out)."""
    split, vague = rates
    a, k = 1.0 / phi, o / phi
    with np.errstate(divide="ignore"):
        log_ratio = a * np.log(vague / split) - (a + k) * np.log((vague + f) / (split + f))
    odds: Float64Array = prior_odds * np.exp(np.clip(log_ratio, -700.0, 700.0))
    return odds


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
