"""A window's entities are numbered once (one sort of its codes) and each part's entity sketch
groups the numbers in linear time: the same sketches, byte for byte, as sorting each part's own
codes, whatever the codes look like."""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
import pytest

from app.db.repositories.window_rows import SegmentRows
from app.metrics import build_sketch
from app.metrics.sketch_build import NO_ENTITY, number_entities
from app.windows.rows import numbered_parts, window_parts

Codes = npt.NDArray[np.int64]


def _segment(name: str, rng: np.random.Generator, rows: int, cards: Codes) -> SegmentRows:
    labels = (rng.random(rows) < 0.05).astype(np.int8)
    scores = np.round(rng.normal(2.0 * labels, 1.0), 1)  # ties, within and across cards
    empty = np.empty(0, dtype=np.float64)
    return SegmentRows(
        name,
        rows,
        scores,
        labels,
        empty,
        np.zeros(rows, dtype=np.int64),
        np.zeros(rows, dtype=np.int8),
        amounts=np.round(rng.lognormal(3.0, 1.2, rows), 2),
        unlabelled_amounts=empty,
        entities=rng.choice(cards, size=rows),
        unlabelled_entities=np.empty(0, dtype=np.int64),
    )


def _sketch_bytes(part: SegmentRows) -> bytes:
    sketch = build_sketch(
        part.scores,
        part.labels,
        threshold=1.0,
        amounts=part.amounts,
        entities=part.entities,
    )
    return sketch.to_bytes()


@pytest.mark.parametrize(
    ("seed", "cards"),
    [
        (1, np.random.default_rng(9).integers(-(2**63) + 1, 2**63 - 1, 400)),  # hashes
        (2, np.arange(300, dtype=np.int64)),  # already small numbers (the SQLite read)
        (3, np.array([5, 7], dtype=np.int64)),  # two cards, many rows each
    ],
)
def test_numbered_parts_give_the_sketches_of_each_parts_own_codes(seed: int, cards: Codes) -> None:
    rng = np.random.default_rng([29, 24, seed])
    segments = [_segment(name, rng, rows, cards) for name, rows in (("a", 900), ("b", 40))]
    segments.append(_segment("c", rng, 1, cards))
    plain, numbered = window_parts(segments), numbered_parts(segments)
    assert [p.segment for p in numbered] == [p.segment for p in plain]
    for before, after in zip(plain, numbered, strict=True):
        assert _sketch_bytes(after) == _sketch_bytes(before), after.segment
    whole = numbered[0].entities
    assert whole.min() == 0
    assert whole.max() == np.unique(plain[0].entities).size - 1


def test_a_segment_without_entities_keeps_none() -> None:
    rng = np.random.default_rng([29, 24, 4])
    cards = np.arange(50, dtype=np.int64) * 1_000_003
    named, unnamed = _segment("a", rng, 200, cards), _segment("b", rng, 100, cards)
    unnamed = dataclasses.replace(unnamed, entities=np.full(100, NO_ENTITY, dtype=np.int64))
    whole, first, second = numbered_parts([named, unnamed])
    whole_sketch = build_sketch(whole.scores, whole.labels, threshold=1.0, entities=whole.entities)
    assert whole_sketch.entities is None
    assert np.all(second.entities == NO_ENTITY)
    assert _sketch_bytes(first) == _sketch_bytes(named)


def test_without_entities_the_parts_are_left_as_they_are() -> None:
    rng = np.random.default_rng([29, 24, 5])
    segment = _segment("a", rng, 30, np.arange(3, dtype=np.int64))
    segment = dataclasses.replace(segment, entities=np.full(30, NO_ENTITY, dtype=np.int64))
    assert numbered_parts([segment])[0].entities is window_parts([segment])[0].entities


@pytest.mark.parametrize("spread", [3, 10, 10**6, 2**62])
def test_both_ways_of_numbering_give_the_same_indices(spread: int) -> None:
    """Codes below twice their count are counted, any others sorted: the same indices."""
    rng = np.random.default_rng([29, 24, spread])
    codes = rng.integers(0, spread, size=2_000)
    entity, size = number_entities(codes)
    _, expected = np.unique(codes, return_inverse=True)
    assert size == np.unique(codes).size
    np.testing.assert_array_equal(entity, expected)
    empty, none = number_entities(np.empty(0, dtype=np.int64))
    assert empty.size == 0
    assert none == 0


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (2**62, 2**62 + 50),  # every code shares its top bits with others: all rows re-sorted
        (-(2**63), -(2**63) + 3_000),  # the smallest codes, near the sign bit's flip
        (-(2**40), 2**40),  # negative and positive, some sharing their top bits
        (-(2**63), 2**63 - 1),  # hashes: nearly never sharing them
    ],
)
def test_sorted_numbering_orders_codes_that_share_their_top_bits(low: int, high: int) -> None:
    """The sort packs each code's top bits above its row's index; codes that share those bits
    are put in code order again: the indices of np.unique, whatever the codes."""
    rng = np.random.default_rng([29, 24, low % 1_000, high % 1_000])
    distinct = rng.integers(low, high, size=700, dtype=np.int64, endpoint=True)
    codes = distinct[rng.integers(0, distinct.size, size=5_000)]
    entity, size = number_entities(codes)
    expected_codes, expected = np.unique(codes, return_inverse=True)
    assert size == expected_codes.size
    np.testing.assert_array_equal(entity, expected)
