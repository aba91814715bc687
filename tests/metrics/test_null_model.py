"""NullModel: windows drawn from a reference, against windows drawn from the true model."""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics import InvalidInputError, NullModel, build_sketch, evaluate_sketch, pool_sketches
from app.metrics.null_model import categorical_picks, grouped_calibrated_ap

PI0 = 0.005


def _window(rng: np.random.Generator, positives: int, pi: float, mu1: float = 2.5):  # type: ignore[no-untyped-def]
    n = int(positives / pi)
    y = np.zeros(n, dtype=bool)
    y[rng.choice(n, positives, replace=False)] = True
    s = rng.standard_normal(n) + mu1 * y
    return build_sketch(s, y, threshold=2.0)


@pytest.fixture(scope="module")
def null() -> NullModel:
    rng = np.random.default_rng(1)
    return NullModel.of(pool_sketches([_window(rng, 100, 0.005) for _ in range(20)]), pi0=PI0)


@pytest.mark.parametrize(("positives", "pi"), [(25, 0.001), (25, 0.02), (100, 0.005)])
def test_draws_match_windows_of_the_true_model(null: NullModel, positives: int, pi: float) -> None:
    """Mean and spread of the calibrated AP of windows of a given size: drawn from the
    reference vs drawn from the Gaussian model itself (the reference's own error, about 0.012,
    shifts the mean; the finite-sample bias above it grows with the negatives)."""
    draws = null.draw(positives, int(positives / pi) - positives, replicates=2_000, seed=2)
    rng = np.random.default_rng(3)
    truth = np.array(
        [
            evaluate_sketch(_window(rng, positives, pi), pi0=PI0).calibrated["average_precision"]
            for _ in range(300)
        ]
    )
    population = 0.375  # calibrated AP at pi0 = 0.005 for N(2.5, 1) vs N(0, 1)
    assert draws.mean() - null.value == pytest.approx(truth.mean() - population, abs=0.015)
    assert draws.std() == pytest.approx(truth.std(), rel=0.12)


def test_standard_error_of_the_reference_itself(null: NullModel) -> None:
    # 2,000 positives: about 0.5 / sqrt(2,000).
    assert null.positives == 2_000
    assert null.standard_error() == pytest.approx(0.5 / 2_000**0.5, rel=0.25)


def test_draws_are_seeded_and_checked(null: NullModel) -> None:
    a = null.draw(10, 5_000, replicates=100, seed=7)
    np.testing.assert_array_equal(a, null.draw(10, 5_000, replicates=100, seed=7))
    assert not np.array_equal(a, null.draw(10, 5_000, replicates=100, seed=8))
    with pytest.raises(InvalidInputError, match="positives and negatives"):
        null.draw(0, 5_000, replicates=100, seed=1)
    with pytest.raises(InvalidInputError, match="replicates"):
        null.draw(10, 5_000, replicates=5, seed=1)


def test_a_reference_needs_both_classes() -> None:
    sketch = build_sketch(np.array([0.1, 0.2]), np.array([0, 0]), threshold=0.5)
    with pytest.raises(InvalidInputError, match="both classes"):
        NullModel.of(sketch, pi0=PI0)


def test_categorical_picks_are_the_capped_binary_search() -> None:
    """The guide table picks the blocks ``np.searchsorted`` picks, capped at the last: shares
    near equal (the null model's blocks), skewed, with empty blocks, uniforms on the cumulative
    shares themselves and past the top (the sum of the shares may round above their cumsum)."""
    rng = np.random.default_rng(50)
    for trial in range(300):
        size = int(rng.integers(1, 130))
        alpha = [50.0, 1.0, 0.05][trial % 3]
        share = rng.dirichlet(np.full(size, alpha))
        share[rng.random(size) < 0.1] = 0.0
        if share.sum() == 0.0:
            share[-1] = 1.0
        cumulative = np.cumsum(share)
        u = rng.random((int(rng.integers(1, 50)), int(rng.integers(1, 70)))) * share.sum()
        u.flat[: min(u.size, size)] = cumulative[: min(u.size, size)]
        u.flat[-1] = cumulative[-1] * (1.0 + 1e-15)
        expected = np.minimum(np.searchsorted(cumulative, u), size - 1)
        picks = categorical_picks(cumulative, u)
        assert picks.shape == u.shape
        np.testing.assert_array_equal(picks, expected)


def _plain_grouped_ap(
    hits: np.ndarray, false: np.ndarray, negatives: np.ndarray | float, pi0: float
) -> np.ndarray:
    """grouped_calibrated_ap as its formula reads, one fresh array a step."""
    totals = hits.sum(axis=1, keepdims=True)
    below = np.asarray(negatives, dtype=np.float64).reshape(-1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = np.cumsum(hits, axis=1) / totals
        fpr = np.cumsum(false, axis=1) / below
        flagged = pi0 * tpr + (1.0 - pi0) * fpr
        precision = np.divide(pi0 * tpr, flagged, out=np.zeros_like(tpr), where=flagged > 0)
        ap: np.ndarray = (hits * precision).sum(axis=1) / totals[:, 0]
        return ap


def test_grouped_ap_in_its_buffers_is_the_formula_float_for_float() -> None:
    """The in-place steps give the plain expression's floats and dtype: float64, float32 and
    integer counts, rows without positives or without negatives, one or many negatives."""
    rng = np.random.default_rng(51)
    for trial in range(300):
        rows, groups = int(rng.integers(1, 200)), int(rng.integers(1, 80))
        dtype = [np.float64, np.int64, np.float32][trial % 3]
        hits = rng.poisson(rng.uniform(0.0, 3.0), (rows, groups)).astype(dtype)
        false = rng.poisson(rng.uniform(0.0, 50.0), (rows, groups)).astype(dtype)
        negatives = (
            false.sum(axis=1) + rng.integers(0, 100, rows) if trial % 2 else float(false.sum() + 5)
        )
        pi0 = float(rng.uniform(0.001, 0.5))
        expected = _plain_grouped_ap(hits, false, negatives, pi0)
        got = grouped_calibrated_ap(hits, false, negatives, pi0)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
