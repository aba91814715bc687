"""Labels still arriving: how complete a window's fraud labels are at each age, and what its
complete labels will show (reporting-delay nowcasting).

Fraud labels reach a monitoring service over weeks: investigators' verdicts on the alerts they
review within a day, chargebacks for the frauds nobody reviewed after days to weeks. At any
moment a window's labelled frauds are therefore a *thinned* sample of its eventual frauds, and
thinned most where the model did not flag (no alert, no feedback). This is the problem of
counting cases reported late (epidemiology's nowcasting of incomplete case counts) and claims
incurred but not reported (insurance's chain-ladder reserving), and it is solved here the same
way:

* :class:`Arrivals` keeps a window's labels by *look*: label ``i`` is counted from look
  ``ceil((labelled_at - window end) / look length)`` on (looks are the instants a window length
  apart after the window's end at which the window is estimated).
* :func:`develop` estimates, per *cell* (a band of scores; a label's delay depends mostly on
  whether the model flagged the row), the share of a window's eventual frauds labelled by look
  ``k``: the completeness ``F_c(k)``, by the chain-ladder method on recent windows (the
  development factor from look ``k`` to ``k + 1`` is the ratio of their cumulative counts summed
  over the most recent windows old enough to have both), so reporting that speeds up or slows
  down is tracked with a lag of about ``k`` looks, not of a whole horizon. A Poisson bootstrap
  over the windows gives replicates of ``F``: windows whose reporting differed from one another
  widen every interval built on it.
* :func:`estimate_window` scales a window's labels up: in cell ``c`` its eventual frauds are
  Poisson(mu_c), its labels so far Poisson(mu_c F_c), and mu_c has a Gamma prior centred on the
  reference's share of the cell times the scale the labels so far imply (where they are nearly
  complete: the flagged rows, after the investigators' feedback), with shape ``alpha``: a weak
  prior, which the labels override as they arrive. Draws of the hidden frauds, placed in the
  cell's bins as the reference and the arrivals so far place them, give the window's eventual
  fraud rate, precision and recall at the threshold and calibrated average precision, each with
  an interval.
* :func:`tilt_evidence` is the early drop detector's evidence: the log-likelihood ratio of the
  labelled frauds' scores, *given how many arrived and where labels arrive fast*, under a drop
  (the reference's fraud scores exponentially tilted down, on the binormal axis, until the
  calibrated AP has fallen by the design drop) against no drop. Conditioning on the count makes
  it blind to the fraud rate; conditioning on the completeness makes it blind to the mere fact
  that flagged frauds are labelled first. Its exponential has expectation one under "no drop"
  whatever the window's size or age, which is what lets a CUSUM of it keep its false-alarm bound.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from app.metrics.errors import InvalidInputError
from app.metrics.null_model import grouped_calibrated_ap
from app.metrics.types import BoolArray, Float64Array, Int64Array, Interval

UNKNOWN_LOOK = -1
"""The look of a label whose arrival time is unknown (stored before calmon kept label times)."""
_MAGIC = b"CMAR"
_VERSION = 1


def _aggregate(keys: list[Int64Array]) -> tuple[list[Int64Array], Int64Array]:
    """Unique rows of the stacked ``keys`` columns and how many times each occurs."""
    if not keys[0].size:
        return [np.empty(0, dtype=np.int64) for _ in keys], np.empty(0, dtype=np.int64)
    stacked = np.stack([np.asarray(k, dtype=np.int64) for k in keys], axis=1)
    unique, counts = np.unique(stacked, axis=0, return_counts=True)
    return [unique[:, i].copy() for i in range(len(keys))], counts.astype(np.int64)


@dataclass(frozen=True)
class Arrivals:
    """A window's labels by the look they arrived at (see the module docstring).

    Frauds are kept per (bin, look, source); the labels saying "legitimate" (an investigator
    clearing an alert, a confirmed outcome) per (flagged, look, source): where a fraud scored is
    what the estimates need, while a cleared row only counts toward the alerts' precision.
    Sources are the stored label-source codes (0 when unknown).
    """

    fraud_bins: Int64Array
    fraud_looks: Int64Array
    fraud_sources: Int64Array
    fraud_counts: Int64Array
    cleared_flagged: Int64Array
    cleared_looks: Int64Array
    cleared_sources: Int64Array
    cleared_counts: Int64Array

    @classmethod
    def of(
        cls,
        frauds: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
        cleared: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
    ) -> Arrivals:
        """Count labelled rows given one entry per row: ``frauds`` as (bins, looks, sources),
        ``cleared`` as (flagged 0/1, looks, sources)."""
        fraud_columns = [np.asarray(a, dtype=np.int64) for a in frauds]
        cleared_columns = [np.asarray(a, dtype=np.int64) for a in cleared]
        for columns in (fraud_columns, cleared_columns):
            if len({c.shape for c in columns}) != 1:
                raise InvalidInputError("each label's columns must have one length")
        (bins, looks, sources), counts = _aggregate(fraud_columns)
        (flagged, c_looks, c_sources), c_counts = _aggregate(cleared_columns)
        return cls(bins, looks, sources, counts, flagged, c_looks, c_sources, c_counts)

    @property
    def frauds(self) -> int:
        """Fraud labels in all."""
        return int(self.fraud_counts.sum())

    @property
    def unknown_times(self) -> int:
        """Labels whose arrival time is unknown."""
        unknown = self.fraud_counts[self.fraud_looks == UNKNOWN_LOOK].sum()
        return int(unknown + self.cleared_counts[self.cleared_looks == UNKNOWN_LOOK].sum())

    def frauds_per_bin(self, bins: int, by_look: int | None = None) -> Int64Array:
        """Fraud labels per bin arrived by look ``by_look`` (all of them if None; labels of
        unknown time count as arrived: they are there now)."""
        keep = np.ones(self.fraud_looks.size, dtype=bool)
        if by_look is not None:
            keep = self.fraud_looks <= by_look
        out: Int64Array = np.bincount(
            self.fraud_bins[keep], weights=self.fraud_counts[keep], minlength=bins
        ).astype(np.int64)
        return out

    def cumulative(self, cell_of_bin: Int64Array, cells: int, horizon: int) -> Int64Array:
        """Fraud labels per cell arrived by each look 0..``horizon``, shape (cells, horizon + 1).

        Labels arriving after the horizon are left out: what the estimates target is the
        window's frauds as its labels showed them when it matured."""
        known = (self.fraud_looks >= 0) & (self.fraud_looks <= horizon)
        grid = np.zeros((cells, horizon + 1), dtype=np.int64)
        np.add.at(
            grid,
            (cell_of_bin[self.fraud_bins[known]], self.fraud_looks[known]),
            self.fraud_counts[known],
        )
        out: Int64Array = np.cumsum(grid, axis=1)
        return out

    def cleared(self, *, flagged: bool, source: int | None, by_look: int | None) -> int:
        """Labels saying "legitimate" on flagged (or unflagged) rows, of ``source`` (any if
        None), arrived by ``by_look`` (any time if None)."""
        keep = self.cleared_flagged == int(flagged)
        if source is not None:
            keep &= self.cleared_sources == source
        if by_look is not None:
            keep &= self.cleared_looks <= by_look
        return int(self.cleared_counts[keep].sum())

    def frauds_where(self, bins: BoolArray, *, source: int | None, by_look: int | None) -> int:
        """Fraud labels in the bins where ``bins`` holds, of ``source``, arrived by ``by_look``."""
        keep = bins[self.fraud_bins]
        if source is not None:
            keep &= self.fraud_sources == source
        if by_look is not None:
            keep &= self.fraud_looks <= by_look
        return int(self.fraud_counts[keep].sum())

    def to_bytes(self) -> bytes:
        """Magic, version, the two entry counts, then each column as little-endian int32 (the
        counts as int64): a few bytes per distinct (bin, look, source) of a window."""
        header = _MAGIC + struct.pack(
            "<HII", _VERSION, self.fraud_bins.size, self.cleared_looks.size
        )
        parts = [
            self.fraud_bins.astype("<i4"),
            self.fraud_looks.astype("<i4"),
            self.fraud_sources.astype("<i4"),
            self.fraud_counts.astype("<i8"),
            self.cleared_flagged.astype("<i4"),
            self.cleared_looks.astype("<i4"),
            self.cleared_sources.astype("<i4"),
            self.cleared_counts.astype("<i8"),
        ]
        return header + b"".join(p.tobytes() for p in parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> Arrivals:
        """Inverse of :meth:`to_bytes`; rejects unknown versions and truncated data."""
        if len(data) < 14 or data[:4] != _MAGIC:
            raise InvalidInputError("not calmon label arrivals")
        version, frauds, cleared = struct.unpack_from("<HII", data, 4)
        if version != _VERSION or len(data) != 14 + 20 * frauds + 20 * cleared:
            raise InvalidInputError(f"label arrivals of version {version}, {len(data)} bytes")
        offset, columns = 14, []
        for size, kinds in (
            (frauds, ("<i4", "<i4", "<i4", "<i8")),
            (cleared, ("<i4",) * 3 + ("<i8",)),
        ):
            for kind in kinds:
                column = np.frombuffer(data, dtype=kind, count=size, offset=offset)
                columns.append(column.astype(np.int64))
                offset += size * np.dtype(kind).itemsize
        return cls(*columns)


@dataclass(frozen=True)
class Development:
    """Per cell, the share of a window's eventual frauds labelled by each look.

    ``completeness[c, k]`` is F_c(k) (1 at the horizon; NaN where no window old enough was
    there to tell); ``replicates[r, c, k]`` the same from windows resampled (Poisson bootstrap);
    ``windows[k]`` how many windows each development factor from ``k`` to ``k + 1`` rests on.
    """

    horizon: int
    completeness: Float64Array
    replicates: Float64Array
    windows: Int64Array

    def at(self, look: int) -> Completeness:
        """F per cell at ``look`` (capped at the horizon), with its replicates."""
        k = min(max(look, 0), self.horizon)
        return Completeness(look, self.completeness[:, k], self.replicates[:, :, k])


@dataclass(frozen=True)
class Completeness:
    """F per cell at one look: the estimate (NaN: unknown) and its bootstrap replicates."""

    look: int
    value: Float64Array
    replicates: Float64Array

    def log_spread(self) -> Float64Array:
        """Per cell, the standard deviation of log F over the replicates (0 where F is 1, or
        not positive in any replicate)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(self.replicates > 0, np.log(self.replicates), np.nan)
        finite = np.isfinite(logs)
        counts = finite.sum(axis=0)
        filled = np.where(finite, logs, 0.0)
        mean = filled.sum(axis=0) / np.maximum(counts, 1)
        squares = np.where(finite, (logs - mean) ** 2, 0.0).sum(axis=0)
        spread: Float64Array = np.sqrt(squares / np.maximum(counts, 1))
        return spread


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
    windows, cells, looks = counts.shape
    horizon = looks - 1
    if recent < 1 or replicates < 1:
        raise InvalidInputError("recent windows and replicates must be positive")
    # selection[k, j]: window j is one of the `recent` newest at least k + 1 looks old.
    selection = np.zeros((horizon, windows))
    for k in range(horizon):
        old_enough = np.flatnonzero(age >= k + 1)[-recent:]
        selection[k, old_enough] = 1.0
    later = np.einsum("kj,jck->jck", selection, counts[:, :, 1:]) if horizon else counts[:, :, :0]
    earlier = np.einsum("kj,jck->jck", selection, counts[:, :, :-1]) if horizon else later
    rng = np.random.default_rng(seed)
    weights = np.vstack([np.ones(windows), rng.poisson(1.0, (replicates, windows))])
    numerator = np.einsum("rj,jck->rck", weights, later)
    denominator = np.einsum("rj,jck->rck", weights, earlier)
    with np.errstate(divide="ignore", invalid="ignore"):
        # 1/lambda: nothing arrived by k while some did by k + 1 gives 0 (F(k) = 0: no label is
        # expected that early); nothing arrived by either gives 1 (nothing to develop).
        inverse = np.where(numerator > 0, denominator / numerator, 1.0)
    unseen = selection.sum(axis=1) == 0  # no window old enough: F unknown from there down
    inverse[:, :, unseen] = np.nan
    tail = np.cumprod(inverse[:, :, ::-1], axis=2)[:, :, ::-1]
    complete = np.concatenate([tail, np.ones((replicates + 1, cells, 1))], axis=2)
    return Development(
        horizon=horizon,
        completeness=complete[0],
        replicates=complete[1:],
        windows=selection.sum(axis=1).astype(np.int64),
    )


@dataclass(frozen=True)
class Cells:
    """How a model's score bins group into cells of one reporting speed, and the reference."""

    of_bin: Int64Array
    """Each bin's cell."""
    flagged: BoolArray
    """Each bin's rows are flagged (the bin lies at or above the threshold)."""
    reference_shares: Float64Array
    """The reference's fraud share per bin (sums to 1)."""

    @property
    def count(self) -> int:
        """Number of cells."""
        return int(self.of_bin.max()) + 1 if self.of_bin.size else 0

    def shares(self) -> Float64Array:
        """The reference's fraud share per cell."""
        out: Float64Array = np.bincount(
            self.of_bin, weights=self.reference_shares, minlength=self.count
        ).astype(np.float64)
        return out


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
    reference: binning ties the rows of a bin); ``prior_shape`` is the Gamma prior's shape
    (pseudo-frauds); ``shape_strength`` the pseudo-frauds with which the reference's shape
    places a cell's hidden frauds in its bins.
    """

    pi0: float
    ap_shift: float
    prior_shape: float
    shape_strength: float
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
    if (shares * f).sum() <= 0:
        return EarlyEstimate.unavailable(
            look, so_far, "no fraud label is expected this early (none arrived so soon before)"
        )
    if so_far > 0:
        # A replicate that expects no label by this look (none of its windows had one so soon)
        # could not have produced the labels that came: it is left out, as the early evidence
        # leaves it out (TiltTest.evidence). Kept, it scaled them up by 1/0.
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
    weights = settings.shape_strength * inside + o
    weight_sum = np.bincount(cells.of_bin, weights=weights, minlength=count)[cells.of_bin]
    within = np.divide(weights, weight_sum, out=np.zeros_like(weights), where=weight_sum > 0)

    # The point estimate: each cell's posterior mean of its hidden frauds.
    prior = _prior(o_cell, shares, f[None, :])[0]
    mean = (settings.prior_shape + o_cell) / (settings.prior_shape / prior + f)
    point = np.minimum(o + (mean * (1.0 - f))[cells.of_bin] * within, n)
    # The draws: a completeness replicate, the cell's Poisson mean from its posterior, the
    # hidden frauds, placed in the cell's bins.
    shape = settings.prior_shape
    rate = shape / _prior(o_cell, shares, reps) + reps
    mu = rng.gamma(shape + o_cell[None, :], 1.0 / rate)
    hidden_cells = rng.poisson(mu * np.clip(1.0 - reps, 0.0, 1.0))
    hidden = np.zeros((reps.shape[0], o.size))
    for c in range(count):
        members = np.flatnonzero(cells.of_bin == c)
        share = within[members]
        if members.size and share.sum() > 0:
            hidden[:, members] = rng.multinomial(hidden_cells[:, c], share / share.sum())
    drawn = np.minimum(o[None, :] + hidden, n[None, :])
    values, _ = _summaries(point[None, :], n, cells.flagged, settings)
    _, intervals = _summaries(drawn, n, cells.flagged, settings)
    undefined = {name: _why_undefined(name) for name in ESTIMATED if values[name] is None}
    return EarlyEstimate(look, so_far, values, intervals, undefined)


def _prior(o_cell: Float64Array, shares: Float64Array, reps: Float64Array) -> Float64Array:
    """Each replicate's prior mean per cell: the reference's share times the scale the labels
    so far imply at that replicate's completeness."""
    expected = np.maximum((shares[None, :] * reps).sum(axis=1, keepdims=True), 1e-300)
    prior: Float64Array = np.maximum(o_cell.sum() / expected * shares[None, :], 1e-9)
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


# --- the early drop detector's evidence ------------------------------------------------------


def binormal_axis(legit: npt.ArrayLike) -> Float64Array:
    """Each bin's position on the binormal axis: the normal score of the legitimate rows' CDF
    at the bin's middle. Along it a classifier's fraud scores are about normal for most models
    (the binormal ROC model), and for Siblini et al.'s Gaussian setup it is the score itself, so
    a shift of the frauds' mean there is an exponential tilt along it."""
    counts = np.asarray(legit, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        raise InvalidInputError("the binormal axis needs legitimate rows")
    below = np.concatenate([[0.0], np.cumsum(counts)[:-1]])
    middle = (below + counts / 2.0) / total
    edge = 0.5 / total
    axis: Float64Array = ndtri(np.clip(middle, edge, 1.0 - edge))
    return axis


def tilted(shares: Float64Array, axis: Float64Array, theta: float | Float64Array) -> Float64Array:
    """The fraud shares exponentially tilted by ``theta`` along ``axis`` (rows: thetas)."""
    t = np.atleast_1d(np.asarray(theta, dtype=np.float64))[:, None]
    weights = shares[None, :] * np.exp(t * (axis[None, :] - axis.max()))
    out: Float64Array = weights / weights.sum(axis=1, keepdims=True)
    return out


def tilted_rows(shares: Float64Array, axis: Float64Array, theta: float) -> Float64Array:
    """Each row of fraud shares (rows: curves) tilted by ``theta`` along ``axis``."""
    weights = shares * np.exp(theta * (axis[None, :] - axis.max()))
    out: Float64Array = weights / weights.sum(axis=1, keepdims=True)
    return out


def _log_mean_exp(values: Float64Array) -> float:
    """log(mean(exp(values))), without overflow; -inf if every value is."""
    top = float(np.max(values))
    if not np.isfinite(top):
        return top
    return top + float(np.log(np.mean(np.exp(values - top))))


def binned_average_precision(
    fraud_shares: Float64Array, legit_shares: Float64Array, pi0: float
) -> Float64Array:
    """Calibrated AP of the bins' shares (rows: curves; highest bin first inside)."""
    f1 = np.atleast_2d(fraud_shares)
    f0 = np.broadcast_to(np.atleast_2d(legit_shares), f1.shape)
    return grouped_calibrated_ap(f1[:, ::-1], f0[:, ::-1], f0.sum(axis=1), pi0)


def tilt_for_drop(
    fraud_shares: Float64Array,
    legit_shares: Float64Array,
    axis: Float64Array,
    *,
    pi0: float,
    drop: float,
) -> float:
    """The (negative) tilt of the fraud scores that lowers the binned calibrated AP by the
    relative ``drop``."""
    if not 0.0 < drop < 1.0:
        raise InvalidInputError(f"drop must be in (0, 1), got {drop}")
    target = (1.0 - drop) * float(binned_average_precision(fraud_shares, legit_shares, pi0)[0])
    low, high = -8.0, 0.0
    if (
        float(binned_average_precision(tilted(fraud_shares, axis, low)[0], legit_shares, pi0)[0])
        > target
    ):
        return low  # the bins cannot show so large a drop: the strongest tilt they can
    for _ in range(60):
        middle = (low + high) / 2.0
        value = float(
            binned_average_precision(tilted(fraud_shares, axis, middle)[0], legit_shares, pi0)[0]
        )
        low, high = (middle, high) if value < target else (low, middle)
    return (low + high) / 2.0


@dataclass(frozen=True)
class TiltEvidence:
    """One window's early evidence of a drop: the log-likelihood ratio of its labelled frauds'
    bins under the drop's tilt against no drop, and the standardised shift of their positions
    (positive: they score lower than the reference, weighted by where labels arrive fast)."""

    frauds: int
    log_likelihood_ratio: float
    z: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"frauds": self.frauds, "llr": self.log_likelihood_ratio, "z": self.z}


@dataclass(frozen=True)
class TiltTest:
    """The early drop test of one segment (see the module docstring): the reference's fraud
    shares per bin, the binormal axis, the tilt "no drop" is taken at (the reference's own
    uncertainty given to the window, see app/monitoring/early) and the design drop's tilt."""

    shares: Float64Array
    axis: Float64Array
    null_tilt: float
    drop_tilt: float

    def evidence(self, observed: npt.ArrayLike, completeness: Float64Array) -> TiltEvidence:
        """The evidence of labelled frauds per bin ``observed``, given F per bin at their
        window's look: one row per plausible value of F (rows: the estimate's bootstrap
        replicates, or one row).

        F is not known, only estimated, and at early looks from a handful of arrivals: the
        likelihood of each hypothesis is averaged over the rows (F integrated out, the bootstrap
        standing for its posterior), so a look whose F is uncertain weighs less, and E[exp(LLR)]
        stays 1 under "no drop" when the rows are as spread as F's own uncertainty.
        """
        o = np.asarray(observed, dtype=np.float64)
        frauds = int(o.sum())
        f = np.clip(np.nan_to_num(np.atleast_2d(completeness), nan=0.0), 0.0, 1.0)
        reach = self.shares[None, :] * f
        usable = reach.sum(axis=1) > 0
        if frauds == 0 or not usable.any():
            return TiltEvidence(frauds, 0.0, 0.0)
        reach = reach[usable] / reach[usable].sum(axis=1, keepdims=True)
        arrived = o > 0
        logs = []
        for theta in (self.null_tilt, self.drop_tilt):
            q = tilted_rows(reach, self.axis, theta)
            with np.errstate(divide="ignore"):
                per_row = (o[arrived] * np.log(q[:, arrived])).sum(axis=1)
            logs.append(_log_mean_exp(per_row))
        if not all(np.isfinite(logs)):  # a fraud where no row of either hypothesis puts any
            return TiltEvidence(frauds, 0.0, 0.0)
        q0 = tilted_rows(reach, self.axis, self.null_tilt).mean(axis=0)
        mean = float((q0 * self.axis).sum())
        variance = float((q0 * (self.axis - mean) ** 2).sum())
        spread = np.sqrt(frauds * variance) if variance > 0 else 0.0
        z = float(-(o * (self.axis - mean)).sum() / spread) if spread > 0 else 0.0
        return TiltEvidence(frauds, float(logs[1] - logs[0]), z)


def dispersion(observed: npt.ArrayLike, shares: Float64Array, axis: Float64Array) -> float:
    """How much more the mean position of a window's frauds varies from window to window than
    independent frauds would make it vary: the Pearson dispersion of the windows' standardised
    mean positions (rows of ``observed``: windows' fraud counts per bin, complete), against the
    ``shares`` they were pooled into (so with one degree of freedom fewer). About 1 for
    independent frauds; frauds that come in bursts of similar scores (one compromised card,
    many transactions) make it larger. Under 1 is reported as measured (the caller floors it)."""
    counts = np.atleast_2d(np.asarray(observed, dtype=np.float64))
    per_window = counts.sum(axis=1)
    used = per_window > 0
    if used.sum() < 2:
        return 1.0
    mean = float((shares * axis).sum())
    variance = float((shares * (axis - mean) ** 2).sum())
    if variance <= 0:
        return 1.0
    z = (counts[used] * (axis - mean)).sum(axis=1) / np.sqrt(per_window[used] * variance)
    return float((z * z).sum() / (used.sum() - 1))
