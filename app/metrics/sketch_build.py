"""Building a window's :class:`~app.metrics.sketch.CurveSketch` from its rows: the one sort of
the scores (and of the entity codes, for the entity sketch), everything after it linear."""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from app.metrics._validation import as_scores_and_labels, check_threshold, raise_first_non_finite
from app.metrics.errors import InvalidInputError
from app.metrics.sketch import CurveSketch
from app.metrics.sketch_amounts import frozen, sketch_amounts
from app.metrics.sketch_entity_values import entity_values
from app.metrics.types import Float64Array, Int64Array


def build_sketch(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    *,
    threshold: float,
    amounts: npt.ArrayLike | None = None,
    entities: npt.ArrayLike | None = None,
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
    entities:
        Each row's entity as an integer code (equal codes: the same card or account),
        :data:`NO_ENTITY` where a row names none; the sketch keeps the entity sketch
        (:func:`entity_rows`) only if no row lacks one.

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
    kept = None if amounts is None else sketch_amounts(s, y, amounts, entries, t)
    grouped, values = None, None
    if entities is not None:
        codes = np.asarray(entities, dtype=np.int64)
        if codes.shape != s.shape:
            raise InvalidInputError(f"{codes.size} entities for {s.size} scores")
        if not np.any(codes == NO_ENTITY):
            top, fraud, entity = entity_rows(s, y, codes)
            grouped = build_sketch(top, fraud, threshold=t)
            if kept is not None:
                a = np.asarray(amounts, dtype=np.float64)
                values = entity_values(s, y, a, (entity, top.size), t)
    return CurveSketch(
        n=n,
        threshold=t,
        scores=frozen(np.ascontiguousarray(entries)),
        positives_at=frozen(np.ascontiguousarray(pos_at)),
        negatives_tied=frozen(np.ascontiguousarray(neg_tied.astype(np.int64))),
        negatives_between=frozen(np.ascontiguousarray(neg_between.astype(np.int64))),
        negatives_below=below,
        amounts=kept,
        entities=grouped,
        entity_values=values,
    )


NO_ENTITY: Final = np.iinfo(np.int64).min
"""The entity code of a row that names no entity."""


def entity_rows(
    scores: Float64Array, labels: npt.NDArray[Any], codes: Int64Array
) -> tuple[Float64Array, npt.NDArray[np.int64], Int64Array]:
    """The window as entities (the Worldline/ULB handbook's card precision): one row per
    distinct code, scored at its rows' highest score, positive if any of its rows is; and each
    row's entity (its index in those rows: the codes' order)."""
    entity, size = number_entities(codes)
    # Each entity's maximum score and label are scattered, not reduced over runs (reduceat
    # over 10^5 short runs costs seven times more than maximum.at).
    top: Float64Array = np.full(size, -np.inf)
    np.maximum.at(top, entity, scores)
    fraud = np.zeros(size, dtype=np.int64)
    fraud[entity[np.asarray(labels, dtype=bool)]] = 1
    return top, fraud, entity


def number_entities(codes: Int64Array) -> tuple[Int64Array, int]:
    """Each row's entity as an index (equal codes, equal index; indices in the codes' order),
    and how many entities there are.

    Codes already numbered (all in ``[0, 2 * rows)``, as :func:`app.windows.rows.numbered_parts`
    leaves a window's segments after numbering the whole window once) are counted in linear
    time (a window's own numbering, every index present, is returned as it is); any others
    take one sort of the codes alone (:func:`_code_order`; a lexsort by code and score costs
    eight times more; the order within an entity does not matter to its maximum). Both give
    the same indices for the same codes' pattern of equality and order."""
    if not codes.size:
        return np.empty(0, dtype=np.int64), 0
    if codes.min() >= 0 and codes.max() < 2 * codes.size:
        present = np.zeros(int(codes.max()) + 1, dtype=bool)
        present[codes] = True
        if present.all():  # already 0..size-1, as numbered_parts leaves the whole window
            return codes, present.size
        index = np.cumsum(present, dtype=np.int64) - 1
        return index[codes], int(index[-1]) + 1
    order, grouped = _code_order(codes)
    run = np.zeros(codes.size, dtype=np.int64)
    run[1:] = grouped[1:] != grouped[:-1]
    entity = np.empty(codes.size, dtype=np.int64)
    entity[order] = np.cumsum(run)
    return entity, int(run.sum()) + 1


def _code_order(codes: Int64Array) -> tuple[npt.NDArray[np.intp], Int64Array]:
    """The rows in the order of their codes (a code's rows in any order), and the codes so
    ordered.

    One sort of 64-bit keys, each a code's top bits above its row's index, instead of an
    argsort of the codes: numpy sorts plain integers with SIMD, and argsorts them several times
    slower (numbering 10^6 rows of 330,000 cards: 100 -> 48-53 ms; 10^7 rows, with the re-sort
    below: 2.9-3.2 -> 0.8-1.6 s; the same peak memory). Two codes that share their top bits
    then have their rows interleaved by index; those rows alone are put in code order again
    (rare: about cards^2 / 2^(65 - log2 rows) such pairs, 0.003 for 330,000 cards in 10^6 rows).
    """
    rows = codes.size
    bits = max(1, (rows - 1).bit_length())
    # The sign bit flipped: signed order as unsigned order.
    key = codes.view(np.uint64) ^ np.uint64(1 << 63)
    key >>= bits
    key <<= bits
    key |= np.arange(rows, dtype=np.uint64)
    key.sort()
    order = (key & np.uint64((1 << bits) - 1)).astype(np.intp)
    grouped = codes[order]
    prefix = key >> bits
    shared = prefix[1:] == prefix[:-1]
    clash = np.flatnonzero(shared & (grouped[1:] != grouped[:-1]))
    if clash.size:
        at = np.flatnonzero(np.isin(prefix, prefix[clash]))
        rows_at = order[at]
        rows_at = rows_at[np.lexsort((rows_at, codes[rows_at]))]
        order[at] = rows_at
        grouped[at] = codes[rows_at]
    return order, grouped
