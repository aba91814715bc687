"""evaluate_segment: when stored intervals are moved along their prior grid, and when not."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from app.metrics import build_sketch
from app.windows.evaluation import Draws, SegmentInput, evaluate_segment
from tests.support.synthetic import siblini_window

START = datetime(2026, 1, 1, tzinfo=UTC)


def _source() -> SegmentInput:
    scores, labels = siblini_window(8_000, 0.01, 2.0, 0.0, np.random.default_rng(4))
    sketch = build_sketch(scores, labels, threshold=1.5)
    return SegmentInput("all", START, 8_000, 8_000, int(labels.sum()), sketch)


def test_a_small_move_reuses_the_grid_and_a_large_one_draws_a_new_one() -> None:
    source = _source()
    first = evaluate_segment(source, 0.01, Draws("m", 100))
    assert first.intervals is not None
    assert first.intervals.grid is not None
    assert first.intervals.grid.pi0 == 0.01

    near = evaluate_segment(source, 0.012, Draws("m", 100), stored=first.intervals)
    assert near.intervals is not None
    assert near.intervals.grid is first.intervals.grid  # moved, not re-drawn
    assert near.result is not None
    assert near.result.pi0 == 0.012  # point values are always exact at the new pi0

    far = evaluate_segment(source, 0.2, Draws("m", 100), stored=first.intervals)
    assert far.intervals is not None
    assert far.intervals.grid is not None
    assert far.intervals.grid.pi0 == 0.2  # outside the grid: bootstrapped again around 0.2

    other_count = evaluate_segment(source, 0.012, Draws("m", 200), stored=first.intervals)
    assert other_count.intervals is not None
    assert other_count.intervals.replicates == 200


def test_without_a_pi0_no_grid_is_drawn() -> None:
    evaluated = evaluate_segment(_source(), None, Draws("m", 100))
    assert evaluated.intervals is not None
    assert evaluated.intervals.grid is None
