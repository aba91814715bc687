"""The curve sketch: everything a window's metrics need, in O(positives) space.

One sort of the window's scores, then the distinct scores at which a positive lies ("groups") and
the operating threshold become the sketch's *entries*, in descending score order. For each entry
the sketch keeps the positives at that score, the negatives tied with it, and the negatives
strictly between it and the previous entry; plus the negatives below the last entry. Every metric
of the kernel (any pi0, any bootstrap replicate) is an exact function of these counts, because
between two entries only negatives lie and all of them rank the same way against every positive.

When every row carries an amount (the transaction's value), the sketch also keeps the amounts the
value metrics need (:class:`SketchAmounts`): the positives' amounts per entry, and the negatives'
amount at or above the threshold. Still O(positives).
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics._validation import as_scores_and_labels, check_threshold, raise_first_non_finite
from app.metrics.errors import InvalidInputError
from app.metrics.types import Float64Array, Int64Array

_MAGIC = b"CMSK"
_VERSION = 1
_VERSION_WITH_AMOUNTS = 2  # version 1's layout, then the amounts (a sketch without them stays 1)
# magic, version, count width in bytes (4 or 8), n, negatives below, threshold, entries
_HEADER = struct.Struct("<4sBBqqdq")


def _frozen(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class SketchAmounts:
    """The amounts behind the value metrics, aligned with a sketch's entries.

    Attributes
    ----------
    positive_at:
        Sum of the amounts of the positives at each entry's score.
    positive_sq_at:
        Sum of their squares (the bootstrap's spread of an entry's amount; nothing else).
    negative_flagged:
        Sum of the amounts of the negatives at or above the threshold.
    negative_flagged_sq:
        Sum of their squares (likewise).
    """

    positive_at: Float64Array
    positive_sq_at: Float64Array
    negative_flagged: float
    negative_flagged_sq: float

    def arrays(self) -> Float64Array:
        """The four parts as one float64 array: both per-entry arrays, then both sums."""
        sums = [self.negative_flagged, self.negative_flagged_sq]
        return np.concatenate([self.positive_at, self.positive_sq_at, sums])

    @classmethod
    def of_array(cls, values: Float64Array, entries: int) -> SketchAmounts:
        """Inverse of :meth:`arrays`, checked: finite and non-negative, of the right size."""
        if values.size != 2 * entries + 2 or not (
            np.all(np.isfinite(values)) and values.min(initial=0.0) >= 0.0
        ):
            raise InvalidInputError("inconsistent sketch amounts: size, or a negative amount")
        return cls(
            positive_at=_frozen(values[:entries].copy()),
            positive_sq_at=_frozen(values[entries : 2 * entries].copy()),
            negative_flagged=float(values[-2]),
            negative_flagged_sq=float(values[-1]),
        )


@dataclass(frozen=True, eq=False)
class CurveSketch:
    """A window reduced to the counts that determine every metric (see the module docstring).

    Attributes
    ----------
    n:
        Rows in the window.
    threshold:
        Operating threshold: a row is predicted positive iff ``score >= threshold``.
    scores:
        Entry scores, strictly descending (positive groups plus the threshold).
    positives_at:
        Positives whose score equals the entry's score.
    negatives_tied:
        Negatives whose score equals the entry's score.
    negatives_between:
        Negatives scored strictly between this entry and the previous (higher) one.
    negatives_below:
        Negatives scored below the last entry.
    amounts:
        The amounts of the value metrics; ``None`` unless every row of the window carries one.
    """

    n: int
    threshold: float
    scores: Float64Array
    positives_at: Int64Array
    negatives_tied: Int64Array
    negatives_between: Int64Array
    negatives_below: int
    amounts: SketchAmounts | None = None

    @cached_property
    def positives(self) -> int:
        """Positive rows in the window."""
        return int(self.positives_at.sum())

    @property
    def negatives(self) -> int:
        """Negative rows in the window."""
        return self.n - self.positives

    @cached_property
    def threshold_index(self) -> int:
        """Index of the entry whose score is the threshold."""
        return int(np.flatnonzero(self.scores == self.threshold)[0])

    def roc_points(self) -> tuple[Float64Array, Float64Array]:
        """Return ``(tpr, fpr)`` at each distinct score holding a positive, descending score.

        Rows tied at a score form one threshold (the point includes them all), as in
        scikit-learn. Average precision at prior ``pi`` is
        ``sum(diff(tpr, prepend=0) * pi*tpr / (pi*tpr + (1-pi)*fpr))``.

        Raises
        ------
        InvalidInputError
            If the window lacks positives or negatives (the rates are then undefined).
        """
        positives, negatives = self.positives, self.negatives
        if positives == 0 or negatives == 0:
            raise InvalidInputError(
                f"ROC points need both classes; the window has {positives} positives "
                f"and {negatives} negatives"
            )
        groups = self.positives_at > 0
        tp = np.cumsum(self.positives_at)[groups]
        fp = np.cumsum(self.negatives_between + self.negatives_tied)[groups]
        return tp / positives, fp / negatives

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CurveSketch):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()

    __hash__ = None  # type: ignore[assignment]

    def to_bytes(self) -> bytes:
        """Serialise compactly: a versioned header, then float64 scores and the count arrays
        (then, in version 2, the amounts as float64)."""
        counts = np.concatenate([self.positives_at, self.negatives_tied, self.negatives_between])
        width = 4 if self.n < 2**32 else 8
        header = _HEADER.pack(
            _MAGIC,
            _VERSION if self.amounts is None else _VERSION_WITH_AMOUNTS,
            width,
            self.n,
            self.negatives_below,
            self.threshold,
            self.scores.size,
        )
        dtype = "<u4" if width == 4 else "<i8"
        body = header + self.scores.astype("<f8").tobytes() + counts.astype(dtype).tobytes()
        if self.amounts is None:
            return body
        return body + self.amounts.arrays().astype("<f8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> CurveSketch:
        """Inverse of :meth:`to_bytes`; rejects unknown versions and truncated data."""
        if len(data) < _HEADER.size:
            raise InvalidInputError("sketch bytes are shorter than the header")
        magic, version, width, n, below, threshold, size = _HEADER.unpack_from(data)
        known = (_VERSION, _VERSION_WITH_AMOUNTS)
        if magic != _MAGIC or version not in known or width not in (4, 8):
            raise InvalidInputError(
                f"not a calmon sketch of version {' or '.join(map(str, known))} "
                f"(magic {magic!r}, version {version})"
            )
        counts_end = _HEADER.size + size * (8 + 3 * width)
        expected = counts_end + (8 * (2 * size + 2) if version == _VERSION_WITH_AMOUNTS else 0)
        if len(data) != expected:
            raise InvalidInputError(f"sketch bytes have length {len(data)}, expected {expected}")
        scores = np.frombuffer(data, dtype="<f8", count=size, offset=_HEADER.size)
        dtype = "<u4" if width == 4 else "<i8"
        counts = np.frombuffer(data, dtype=dtype, count=3 * size, offset=_HEADER.size + 8 * size)
        counts = counts.astype(np.int64).reshape(3, size)
        amounts = None
        if version == _VERSION_WITH_AMOUNTS:
            values = np.frombuffer(data, dtype="<f8", offset=counts_end).astype(np.float64)
            amounts = SketchAmounts.of_array(values, size)
        return cls._checked(n, threshold, scores.astype(np.float64), counts, below, amounts=amounts)

    def to_json(self) -> str:
        """Serialise as JSON (floats round-trip exactly through ``repr``)."""
        d: dict[str, Any] = {
            "version": _VERSION if self.amounts is None else _VERSION_WITH_AMOUNTS,
            "n": self.n,
            "threshold": self.threshold,
            "negatives_below": self.negatives_below,
            "scores": self.scores.tolist(),
            "positives_at": self.positives_at.tolist(),
            "negatives_tied": self.negatives_tied.tolist(),
            "negatives_between": self.negatives_between.tolist(),
        }
        if self.amounts is not None:
            d["amounts"] = self.amounts.arrays().tolist()
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CurveSketch:
        """Inverse of :meth:`to_json`."""
        d = json.loads(text)
        version = d.get("version")
        if version not in (_VERSION, _VERSION_WITH_AMOUNTS):
            raise InvalidInputError(f"unsupported sketch version {version!r}")
        counts = np.array(
            [d["positives_at"], d["negatives_tied"], d["negatives_between"]], dtype=np.int64
        ).reshape(3, -1)
        scores = np.asarray(d["scores"], dtype=np.float64)
        amounts = None
        if version == _VERSION_WITH_AMOUNTS:
            amounts = SketchAmounts.of_array(
                np.asarray(d["amounts"], dtype=np.float64), scores.size
            )
        return cls._checked(
            int(d["n"]),
            float(d["threshold"]),
            scores,
            counts,
            int(d["negatives_below"]),
            amounts=amounts,
        )

    @classmethod
    def of_counts(
        cls,
        *,
        n: int,
        threshold: float,
        scores: npt.ArrayLike,
        positives_at: npt.ArrayLike,
        negatives_tied: npt.ArrayLike,
        negatives_between: npt.ArrayLike,
        negatives_below: int,
    ) -> CurveSketch:
        """A sketch from its counts, checked like one read back from bytes."""
        counts = np.array([positives_at, negatives_tied, negatives_between], dtype=np.int64)
        return cls._checked(
            int(n),
            float(threshold),
            np.asarray(scores, dtype=np.float64),
            counts.reshape(3, -1),
            int(negatives_below),
        )

    @classmethod
    def _checked(
        cls,
        n: int,
        threshold: float,
        scores: Float64Array,
        counts: Int64Array,
        below: int,
        *,
        amounts: SketchAmounts | None = None,
    ) -> CurveSketch:
        if (
            counts.min(initial=0) < 0
            or below < 0
            or np.any(np.diff(scores) >= 0)
            or int(counts.sum()) + below != n
            or not np.any(scores == threshold)
        ):
            raise InvalidInputError("inconsistent sketch: counts, order or threshold entry")
        return cls(
            n=n,
            threshold=threshold,
            scores=_frozen(scores),
            positives_at=_frozen(counts[0].copy()),
            negatives_tied=_frozen(counts[1].copy()),
            negatives_between=_frozen(counts[2].copy()),
            negatives_below=below,
            amounts=amounts,
        )


def build_sketch(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    *,
    threshold: float,
    amounts: npt.ArrayLike | None = None,
) -> CurveSketch:
    """Sort the window once and reduce it to its :class:`CurveSketch`.

    Parameters
    ----------
    scores:
        Finite real scores, higher meaning more likely positive.
    labels:
        0/1 (or boolean) ground truth, one per score.
    threshold:
        Operating threshold; a row is predicted positive iff ``score >= threshold``.
    amounts:
        Each row's amount (>= 0), NaN where a row has none; the sketch keeps
        :class:`SketchAmounts` only if no row lacks one.

    Raises
    ------
    InvalidInputError
        On empty input, length mismatch, a non-finite score, a label other than 0/1, or a
        negative or infinite amount.
    """
    s, y = as_scores_and_labels(scores, labels)
    t = check_threshold(threshold)
    ordered = np.sort(s)
    if not (np.isfinite(ordered[0]) and np.isfinite(ordered[-1])):
        raise_first_non_finite(s)
    n = s.size
    group_scores, group_pos = np.unique(s[np.flatnonzero(y)], return_counts=True)
    entries = np.union1d(group_scores, np.array([t]))  # ascending, distinct
    pos_at = np.zeros(entries.size, dtype=np.int64)
    pos_at[np.searchsorted(entries, group_scores)] = group_pos
    # Rows at or above each entry, and rows tied with it, from the one sorted array. Each
    # entry's own positives sit right after `left`; only where the next row still ties (a tied
    # negative) is a second binary search needed.
    left = np.searchsorted(ordered, entries, side="left")
    right = left + pos_at
    more = np.flatnonzero(ordered[np.minimum(right, n - 1)] == entries)
    more = more[right[more] < n]
    right[more] = np.searchsorted(ordered, entries[more], side="right")
    entries, pos_at = entries[::-1], pos_at[::-1]
    neg_tied = (right - left)[::-1] - pos_at
    neg_at_or_above = (n - left)[::-1] - np.cumsum(pos_at)
    previous = np.concatenate(([0], neg_at_or_above[:-1]))
    neg_between = neg_at_or_above - neg_tied - previous
    below = int(n - int(group_pos.sum()) - int(neg_at_or_above[-1]))
    kept = None if amounts is None else _amounts(s, y, amounts, entries, t)
    return CurveSketch(
        n=n,
        threshold=t,
        scores=_frozen(np.ascontiguousarray(entries)),
        positives_at=_frozen(np.ascontiguousarray(pos_at)),
        negatives_tied=_frozen(np.ascontiguousarray(neg_tied.astype(np.int64))),
        negatives_between=_frozen(np.ascontiguousarray(neg_between.astype(np.int64))),
        negatives_below=below,
        amounts=kept,
    )


def _amounts(
    scores: Float64Array,
    labels: npt.NDArray[Any],
    amounts: npt.ArrayLike,
    entries: Float64Array,
    threshold: float,
) -> SketchAmounts | None:
    """The window's :class:`SketchAmounts` on ``entries`` (descending), None if a row has no
    amount. Sums are taken in a sorted order, so the same rows read back in another order give
    the same floats."""
    a = np.asarray(amounts, dtype=np.float64)
    if a.shape != scores.shape:
        raise InvalidInputError(f"{a.size} amounts for {scores.size} scores")
    if np.isnan(a).any():
        return None
    if not np.isfinite(a).all() or a.min() < 0.0:
        raise InvalidInputError("amounts must be finite and >= 0 (NaN: the row has none)")
    positive = labels.astype(bool)
    # Entry of each positive (entries are descending; a positive's score is always an entry).
    at = np.searchsorted(-entries, -scores[positive])
    value = a[positive]
    order = np.lexsort((value, at))
    at, value = at[order], value[order]
    flagged = np.sort(a[~positive & (scores >= threshold)])
    return SketchAmounts(
        positive_at=_frozen(np.bincount(at, weights=value, minlength=entries.size)),
        positive_sq_at=_frozen(np.bincount(at, weights=value * value, minlength=entries.size)),
        negative_flagged=math.fsum(flagged.tolist()),
        negative_flagged_sq=math.fsum((flagged * flagged).tolist()),
    )
