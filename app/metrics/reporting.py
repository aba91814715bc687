"""Labels still arriving: a window's labels by the look they arrived at, and how complete a
window's fraud labels are at each age (reporting-delay nowcasting).

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

What the labels so far say a window's complete labels will show is
:mod:`app.metrics.early_estimate`; the early drop test on them is :mod:`app.metrics.tilt`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.types import BoolArray, Float64Array, Int64Array

DRIFT_Z = 1.96
"""The newer and the older half of the windows behind a development differ beyond chance when
their log completeness is this many bootstrap standard deviations apart: steady reporting then
widens no interval in about 19 cells of 20 (a difference under noise alone always exceeds its
variance in a third of them)."""
UNKNOWN_LOOK = -1
"""The look of a label whose arrival time is unknown (stored before calmon kept label times)."""
_MAGIC = b"CMAR"
_VERSION = 1


def _aggregate(keys: list[Int64Array]) -> tuple[list[Int64Array], Int64Array]:
    """Unique rows of the stacked ``keys`` columns and how many times each occurs."""
    if not keys[0].size:
        return [np.empty(0, dtype=np.int64) for _ in keys], np.empty(0, dtype=np.int64)
    columns = [np.asarray(k, dtype=np.int64) for k in keys]
    # np.unique(axis=0) gives these rows in this order too (lexicographic), but through a
    # structured view that costs ~4 ms on a window of 2,500 labels; a lexsort costs a tenth.
    order = np.lexsort(columns[::-1])
    ordered = [c[order] for c in columns]
    changed = np.zeros(order.size, dtype=bool)
    changed[0] = True
    for column in ordered:
        changed[1:] |= column[1:] != column[:-1]
    starts = np.flatnonzero(changed)
    counts = np.diff(np.append(starts, order.size)).astype(np.int64)
    return [column[starts] for column in ordered], counts


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
    ``windows[k]`` how many windows each development factor from ``k`` to ``k + 1`` rests on;
    ``drift[c, k]`` how far log F_c(k) may be off because reporting keeps changing speed (the
    newer half of the windows against the older, less what chance makes of that; 0 where
    they agree); ``dispersion`` how much more the complete windows' arrivals varied than
    Poisson arrivals would (:func:`reporting_dispersion`, at least 1).
    """

    horizon: int
    completeness: Float64Array
    replicates: Float64Array
    windows: Int64Array
    drift: Float64Array
    dispersion: float = 1.0

    def at(self, look: int) -> Completeness:
        """F per cell at ``look`` (capped at the horizon), with its replicates."""
        k = min(max(look, 0), self.horizon)
        return Completeness(
            look,
            self.completeness[:, k],
            self.replicates[:, :, k],
            self.drift[:, k],
            self.dispersion,
        )


@dataclass(frozen=True)
class Completeness:
    """F per cell at one look: the estimate (NaN: unknown), its bootstrap replicates, and how
    far its log may be off because reporting keeps changing speed (:class:`Development`)."""

    look: int
    value: Float64Array
    replicates: Float64Array
    drift: Float64Array | None = None
    dispersion: float = 1.0
    """How much burstier than Poisson the labels arrive (:attr:`Development.dispersion`)."""

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
    windows, _, looks = counts.shape
    horizon = looks - 1
    if recent < 1 or replicates < 1:
        raise InvalidInputError("recent windows and replicates must be positive")
    # selection[k, j]: window j is one of the `recent` newest at least k + 1 looks old.
    selection = np.zeros((horizon, windows))
    for k in range(horizon):
        old_enough = np.flatnonzero(age >= k + 1)[-recent:]
        selection[k, old_enough] = 1.0
    rng = np.random.default_rng(seed)
    weights = np.vstack([np.ones(windows), rng.poisson(1.0, (replicates, windows))])
    complete = _chain_ladder(counts, selection, weights)
    # Reporting that changes speed: the same development from the newer and the older half of
    # each factor's windows. Where they differ beyond chance (DRIFT_Z of the bootstrap's
    # standard deviations), the estimate (between them, and weeks behind the newest windows)
    # may be off by about their difference (``Development.drift``).
    newer = np.zeros_like(selection)
    for k in range(horizon):
        chosen = np.flatnonzero(selection[k])
        newer[k, chosen[chosen.size // 2 :]] = 1.0
    halves = [_chain_ladder(counts, part, weights) for part in (newer, selection - newer)]
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.log(halves[0]) - np.log(halves[1])
    known = np.isfinite(shift[1:])
    seen = np.maximum(known.sum(axis=0), 1)
    spread = np.where(known, shift[1:], 0.0)
    chance = (spread**2).sum(axis=0) / seen - (spread.sum(axis=0) / seen) ** 2
    # A half with no label by a look (F 0) says nothing of the speed there: no drift.
    measured = np.where(np.isfinite(shift[0]), shift[0], 0.0) ** 2
    excess = np.maximum(measured - chance, 0.0)
    drift = np.where(measured > DRIFT_Z**2 * chance, np.sqrt(excess), 0.0)
    return Development(
        horizon=horizon,
        completeness=complete[0],
        replicates=complete[1:],
        windows=selection.sum(axis=1).astype(np.int64),
        drift=drift,
        dispersion=reporting_dispersion(counts[age >= horizon], complete[0]),
    )


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
