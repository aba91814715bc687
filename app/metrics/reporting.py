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
* :func:`app.metrics.development.develop` estimates from the windows' arrivals, per *cell*
  (:class:`Cells`: a band of scores; a label's delay depends mostly on whether the model
  flagged the row), the share of a window's eventual frauds labelled by look ``k`` (the chain
  ladder).

What the labels so far say a window's complete labels will show is
:mod:`app.metrics.early_estimate`; the early drop test on them is :mod:`app.metrics.tilt`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.types import BoolArray, Float64Array, Int64Array

UNKNOWN_LOOK = -1
"""The look of a label whose arrival time is unknown (stored before calmon kept label times)."""
_MAGIC = b"CMAR"
_VERSION = 1


_MAX_CELLS = 1 << 20
"""The most key combinations :func:`_aggregate` counts in a table rather than by sorting."""


def _aggregate(
    keys: list[npt.NDArray[np.integer]], weights: Int64Array | None = None
) -> tuple[list[Int64Array], Int64Array]:
    """Unique rows of the stacked ``keys`` columns (integers, one length) in lexicographic
    order, and how many times each occurs (the sum of their ``weights``, where given)."""
    if not keys[0].size:
        return [np.empty(0, dtype=np.int64) for _ in keys], np.empty(0, dtype=np.int64)
    lows = [int(k.min()) for k in keys]
    sizes = [int(k.max()) - low + 1 for k, low in zip(keys, lows, strict=True)]
    if np.prod(sizes, dtype=np.float64) <= max(_MAX_CELLS, keys[0].size):
        return _aggregate_by_table(keys, lows, sizes, weights)
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
    if weights is None:
        counts = np.diff(np.append(starts, order.size)).astype(np.int64)
    else:
        counts = np.add.reduceat(weights[order], starts).astype(np.int64)
    return [column[starts] for column in ordered], counts


def _aggregate_by_table(
    keys: list[npt.NDArray[np.integer]],
    lows: list[int],
    sizes: list[int],
    weights: Int64Array | None,
) -> tuple[list[Int64Array], Int64Array]:
    """:func:`_aggregate` where the keys span few combinations: each row's combination
    numbered with the first key most significant (so that numbers run in lexicographic order)
    and counted in one table. A window's cleared labels (every legitimate row of a fraud
    stream: 10^7 in a large window) span two flags, a few looks and sources: sorting them took
    0.8 s at 10^7 rows, and the sort's copies 32 bytes a row."""
    code = np.zeros(keys[0].size, dtype=np.int64)
    for key, low, size in zip(keys, lows, sizes, strict=True):
        code *= size
        code += key
        code -= low
    # Weights are counts: their float sums are exact (far below 2^53).
    table = np.bincount(code, weights=weights, minlength=int(np.prod(sizes)))
    del code
    present = np.flatnonzero(table)
    columns = []
    rest = present
    for low, size in zip(lows[::-1], sizes[::-1], strict=True):  # least significant first
        columns.append(rest % size + low)
        rest = rest // size
    return columns[::-1], table[present].astype(np.int64)


def _integers(values: npt.ArrayLike) -> npt.NDArray[np.integer]:
    """``values`` as an integer array, without a copy where they already are one (a flag as
    0/1: a view)."""
    array = np.asarray(values)
    if array.dtype == np.bool_:
        return array.view(np.int8)
    if array.dtype.kind in "iu":
        return array
    return array.astype(np.int64)


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
        fraud_columns = [_integers(a) for a in frauds]
        cleared_columns = [_integers(a) for a in cleared]
        for columns in (fraud_columns, cleared_columns):
            if len({c.shape for c in columns}) != 1:
                raise InvalidInputError("each label's columns must have one length")
        (bins, looks, sources), counts = _aggregate(fraud_columns)
        (flagged, c_looks, c_sources), c_counts = _aggregate(cleared_columns)
        return cls(bins, looks, sources, counts, flagged, c_looks, c_sources, c_counts)

    @classmethod
    def merged(cls, parts: Sequence[Arrivals]) -> Arrivals:
        """The arrivals of ``parts`` counted from disjoint rows, as one (the same as counting
        all their rows at once): a large window is counted block by block."""

        def joined(column: Callable[[Arrivals], Int64Array]) -> Int64Array:
            return np.concatenate([column(part) for part in parts])

        fraud_keys: list[npt.NDArray[np.integer]] = [
            joined(lambda p: p.fraud_bins),
            joined(lambda p: p.fraud_looks),
            joined(lambda p: p.fraud_sources),
        ]
        cleared_keys: list[npt.NDArray[np.integer]] = [
            joined(lambda p: p.cleared_flagged),
            joined(lambda p: p.cleared_looks),
            joined(lambda p: p.cleared_sources),
        ]
        (bins, looks, sources), counts = _aggregate(fraud_keys, joined(lambda p: p.fraud_counts))
        (flagged, c_looks, c_sources), c_counts = _aggregate(
            cleared_keys, joined(lambda p: p.cleared_counts)
        )
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

    def flagged_cells(self) -> BoolArray:
        """Per cell, whether its rows are flagged (a cell lies on one side of the threshold)."""
        out: BoolArray = np.bincount(self.of_bin[self.flagged], minlength=self.count) > 0
        return out

    def shares(self) -> Float64Array:
        """The reference's fraud share per cell."""
        out: Float64Array = np.bincount(
            self.of_bin, weights=self.reference_shares, minlength=self.count
        ).astype(np.float64)
        return out
