"""The curve sketch: everything a window's metrics need, in O(positives) space.

One sort of the window's scores, then the distinct scores at which a positive lies ("groups") and
the operating threshold become the sketch's *entries*, in descending score order. For each entry
the sketch keeps the positives at that score, the negatives tied with it, and the negatives
strictly between it and the previous entry; plus the negatives below the last entry. Every metric
of the kernel (any pi0, any bootstrap replicate) is an exact function of these counts, because
between two entries only negatives lie and all of them rank the same way against every positive.

When every row carries an amount, it also keeps the value metrics' (app/metrics/sketch_amounts.py);
when every row also names an entity, the sums the card bootstrap resamples by entity
(app/metrics/sketch_entity_values.py).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.sketch_amounts import SketchAmounts, frozen
from app.metrics.sketch_entity_values import EntityValues, read_entity_values
from app.metrics.types import Float64Array, Int64Array

_MAGIC = b"CMSK"
_VERSION = 1
_VERSION_EXTENDED = 2  # version 1's layout, then amounts and/or entities (see to_bytes)
_HAS_AMOUNTS = 1
_HAS_ENTITIES = 2
_HAS_ENTITY_VALUES = 4
# magic, version, count width in bytes (4 or 8), n, negatives below, threshold, entries
_HEADER = struct.Struct("<4sBBqqdq")


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
    entities:
        The window as entities (cards, accounts): one row per entity, scored at its highest
        score, positive if any of its rows is (:func:`app.metrics.sketch_build.entity_rows`);
        ``None`` unless every row of the window names one.
    entity_values:
        The value metrics' sums by entity, for the card bootstrap; ``None`` unless every row of
        the window carries an amount and names an entity.
    """

    n: int
    threshold: float
    scores: Float64Array
    positives_at: Int64Array
    negatives_tied: Int64Array
    negatives_between: Int64Array
    negatives_below: int
    amounts: SketchAmounts | None = None
    entities: CurveSketch | None = None
    entity_values: EntityValues | None = None

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
        """Serialise compactly: a versioned header, then float64 scores and the count arrays.

        Version 2 (a sketch with amounts or entities; one without stays version 1, byte for
        byte) appends a flags byte (1: amounts, 2: entities, 4: entity values), then the amounts
        as float64 (:meth:`SketchAmounts.arrays`), then the entity sketch's own bytes,
        length-prefixed, then the entity values as float64 (:meth:`EntityValues.arrays`, its
        first value giving its size). Bytes written before flag 4 existed read back unchanged.

        >>> from app.metrics import build_sketch
        >>> s = build_sketch([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], threshold=0.3)
        >>> CurveSketch.from_bytes(s.to_bytes()) == s == CurveSketch.from_json(s.to_json())
        True
        """
        counts = np.concatenate([self.positives_at, self.negatives_tied, self.negatives_between])
        width = 4 if self.n < 2**32 else 8
        extended = self.amounts is not None or self.entities is not None
        header = _HEADER.pack(
            _MAGIC,
            _VERSION_EXTENDED if extended else _VERSION,
            width,
            self.n,
            self.negatives_below,
            self.threshold,
            self.scores.size,
        )
        dtype = "<u4" if width == 4 else "<i8"
        body = header + self.scores.astype("<f8").tobytes() + counts.astype(dtype).tobytes()
        if not extended:
            return body
        flags = (
            (_HAS_AMOUNTS if self.amounts is not None else 0)
            | (_HAS_ENTITIES if self.entities is not None else 0)
            | (_HAS_ENTITY_VALUES if self.entity_values is not None else 0)
        )
        parts = [body, bytes([flags])]
        if self.amounts is not None:
            parts.append(self.amounts.arrays().astype("<f8").tobytes())
        if self.entities is not None:
            nested = self.entities.to_bytes()
            parts += [struct.pack("<q", len(nested)), nested]
        if self.entity_values is not None:
            parts.append(self.entity_values.arrays().astype("<f8").tobytes())
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> CurveSketch:
        """Inverse of :meth:`to_bytes`; rejects unknown versions and truncated data."""
        if len(data) < _HEADER.size:
            raise InvalidInputError("sketch bytes are shorter than the header")
        magic, version, width, n, below, threshold, size = _HEADER.unpack_from(data)
        known = (_VERSION, _VERSION_EXTENDED)
        if magic != _MAGIC or version not in known or width not in (4, 8):
            raise InvalidInputError(
                f"not a calmon sketch of version {' or '.join(map(str, known))} "
                f"(magic {magic!r}, version {version})"
            )
        counts_end = _HEADER.size + size * (8 + 3 * width)
        if len(data) < counts_end + (version == _VERSION_EXTENDED):
            raise InvalidInputError(f"sketch bytes have length {len(data)}, too short")
        scores = np.frombuffer(data, dtype="<f8", count=size, offset=_HEADER.size)
        dtype = "<u4" if width == 4 else "<i8"
        counts = np.frombuffer(data, dtype=dtype, count=3 * size, offset=_HEADER.size + 8 * size)
        counts = counts.astype(np.int64).reshape(3, size)
        amounts, entities, values, end = None, None, None, counts_end
        if version == _VERSION_EXTENDED:
            amounts, entities, values, end = cls._extensions(data, counts_end, size)
        if len(data) != end:
            raise InvalidInputError(f"sketch bytes have length {len(data)}, expected {end}")
        return cls._checked(
            n, threshold, scores.astype(np.float64), counts, below, amounts=amounts
        ).with_entities(entities, values)

    @classmethod
    def _extensions(
        cls, data: bytes, start: int, size: int
    ) -> tuple[SketchAmounts | None, CurveSketch | None, EntityValues | None, int]:
        """A version 2 sketch's flagged parts from ``start`` (its flags byte), and their end."""
        amounts, entities, values = None, None, None
        flags, end = data[start], start + 1
        if flags & _HAS_AMOUNTS:
            stop = end + 8 * (2 * size + 2)
            if len(data) < stop:
                raise InvalidInputError(f"sketch bytes have length {len(data)}, too short")
            floats = np.frombuffer(data[end:stop], dtype="<f8").astype(np.float64)
            amounts, end = SketchAmounts.of_array(floats, size), stop
        if flags & _HAS_ENTITIES:
            if len(data) < end + 8:
                raise InvalidInputError("sketch bytes end inside the entity sketch's length")
            (length,) = struct.unpack_from("<q", data, end)
            nested = data[end + 8 : end + 8 + length]
            entities, end = cls.from_bytes(nested), end + 8 + length
        if flags & _HAS_ENTITY_VALUES:
            values, end = read_entity_values(data, end)
        return amounts, entities, values, end

    def with_entities(
        self, entities: CurveSketch | None, values: EntityValues | None = None
    ) -> CurveSketch:
        """This sketch with ``entities`` as its entity sketch (checked: plain, same threshold)
        and ``values`` as its entity values (checked: only with amounts and entities)."""
        if values is not None and (self.amounts is None or entities is None):
            raise InvalidInputError("entity values need a sketch with amounts and entities")
        if entities is None:
            if self.entities is None and self.entity_values is None:
                return self
            return replace(self, entities=None, entity_values=None)
        if entities.amounts is not None or entities.entities is not None:
            raise InvalidInputError("an entity sketch has no amounts or entities of its own")
        if entities.threshold != self.threshold or entities.n > self.n:
            raise InvalidInputError("an entity sketch has its window's threshold, and no more rows")
        return replace(self, entities=entities, entity_values=values)

    def to_json(self) -> str:
        """Serialise as JSON (floats round-trip exactly through ``repr``)."""
        extended = self.amounts is not None or self.entities is not None
        d: dict[str, Any] = {
            "version": _VERSION_EXTENDED if extended else _VERSION,
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
        if self.entities is not None:
            d["entities"] = json.loads(self.entities.to_json())
        if self.entity_values is not None:
            d["entity_values"] = self.entity_values.arrays().tolist()
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CurveSketch:
        """Inverse of :meth:`to_json`."""
        d = json.loads(text)
        version = d.get("version")
        if version not in (_VERSION, _VERSION_EXTENDED):
            raise InvalidInputError(f"unsupported sketch version {version!r}")
        counts = np.array(
            [d["positives_at"], d["negatives_tied"], d["negatives_between"]], dtype=np.int64
        ).reshape(3, -1)
        scores = np.asarray(d["scores"], dtype=np.float64)
        amounts = None
        if "amounts" in d:
            amounts = SketchAmounts.of_array(
                np.asarray(d["amounts"], dtype=np.float64), scores.size
            )
        entities = cls.from_json(json.dumps(d["entities"])) if "entities" in d else None
        values = None
        if "entity_values" in d:
            values = EntityValues.of_array(np.asarray(d["entity_values"], dtype=np.float64))
        return cls._checked(
            int(d["n"]),
            float(d["threshold"]),
            scores,
            counts,
            int(d["negatives_below"]),
            amounts=amounts,
        ).with_entities(entities, values)

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
            scores=frozen(scores),
            positives_at=frozen(counts[0].copy()),
            negatives_tied=frozen(counts[1].copy()),
            negatives_between=frozen(counts[2].copy()),
            negatives_below=below,
            amounts=amounts,
        )
