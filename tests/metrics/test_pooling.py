"""pool_sketches: the sketch of several windows' rows, against the sketch of the pooled rows."""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics import (
    CurveSketch,
    InvalidInputError,
    build_sketch,
    evaluate_sketch,
    pool_sketches,
)

PI0 = 0.005


def _windows(positives: int, count: int, seed: int) -> tuple[list[CurveSketch], CurveSketch]:
    """``count`` Gaussian windows (pi log-uniform in [0.001, 0.02]) and their pooled rows."""
    rng = np.random.default_rng(seed)
    scores, labels, sketches = [], [], []
    for _ in range(count):
        pi = float(np.exp(rng.uniform(np.log(0.001), np.log(0.02))))
        n = int(positives / pi)
        y = rng.random(n) < pi
        s = rng.standard_normal(n) + 2.5 * y
        scores.append(s)
        labels.append(y)
        sketches.append(build_sketch(s, y, threshold=2.0))
    return sketches, build_sketch(np.concatenate(scores), np.concatenate(labels), threshold=2.0)


def test_one_window_pools_to_itself() -> None:
    sketches, _ = _windows(25, 1, seed=1)
    assert pool_sketches(sketches) == sketches[0]


def test_counts_positives_and_tied_negatives_are_exact() -> None:
    sketches, exact = _windows(25, 6, seed=2)
    pooled = pool_sketches(sketches)
    assert pooled.n == exact.n
    assert pooled.positives == exact.positives
    np.testing.assert_array_equal(pooled.scores, exact.scores)
    np.testing.assert_array_equal(pooled.positives_at, exact.positives_at)
    # Everything at or above the threshold (the confusion counts) is exact too: each window
    # knows how many of its negatives score >= the threshold.
    assert evaluate_sketch(pooled, pi0=PI0).fp == evaluate_sketch(exact, pi0=PI0).fp


def test_windows_sharing_their_entries_pool_exactly() -> None:
    sketch = _windows(25, 1, seed=3)[0][0]
    doubled = pool_sketches([sketch, sketch])
    assert doubled.n == 2 * sketch.n
    np.testing.assert_array_equal(doubled.negatives_between, 2 * sketch.negatives_between)
    assert doubled.negatives_below == 2 * sketch.negatives_below


@pytest.mark.parametrize(("positives", "tolerance"), [(25, 0.015), (100, 0.003)])
def test_pooled_average_precision_is_within_a_fraction_of_its_standard_error(
    positives: int, tolerance: float
) -> None:
    """14 windows, as a reference pools them. The pooled AP's own standard error is about
    0.026 at 25 positives a window and 0.013 at 100 (module docstring)."""
    for seed in range(3):
        sketches, exact = _windows(positives, 14, seed=10 + seed)
        pooled = evaluate_sketch(pool_sketches(sketches), pi0=PI0)
        truth = evaluate_sketch(exact, pi0=PI0)
        pooled_ap = pooled.calibrated["average_precision"]
        true_ap = truth.calibrated["average_precision"]
        assert pooled_ap is not None
        assert true_ap is not None
        assert abs(pooled_ap - true_ap) < tolerance


def test_thresholds_must_agree_or_be_given() -> None:
    rng = np.random.default_rng(4)
    s, y = rng.standard_normal(500), rng.random(500) < 0.05
    a, b = build_sketch(s, y, threshold=1.0), build_sketch(s, y, threshold=1.5)
    with pytest.raises(InvalidInputError, match="different thresholds"):
        pool_sketches([a, b])
    pooled = pool_sketches([a, b], threshold=1.5)
    assert pooled.threshold == 1.5
    assert pooled.n == 1_000
    with pytest.raises(InvalidInputError, match="at least one"):
        pool_sketches([])
