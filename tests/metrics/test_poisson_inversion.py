"""Poisson counts by inversion: the distribution numpy's sampler draws, faster."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.metrics._poisson_inversion import (
    NORMAL_ABOVE,
    inverse_poisson,
    poisson_columns,
    poisson_inverted,
    poisson_or_normal,
)


@pytest.mark.parametrize("mean", [0.3, 1.0, 6.0, 12.0, 29.0])
def test_counts_follow_the_poisson_probabilities(mean: float) -> None:
    """Two million draws: every count's frequency within 4.5 standard errors of its Poisson
    probability, the mean and variance ``mean`` (a sampler off by one, or with one count's
    probability wrong by 2e-3, fails)."""
    draws = poisson_inverted(mean, (2000, 1000), np.random.default_rng(11)).ravel()
    n = draws.size
    for k in range(int(mean + 4 * math.sqrt(mean)) + 2):
        p = math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1))
        assert abs(float(np.mean(draws == k)) - p) < 4.5 * math.sqrt(p * (1 - p) / n), k
    assert abs(draws.mean() - mean) < 4.5 * math.sqrt(mean / n)
    # The sample variance's standard error: sqrt((mu4 - sigma^4) / n), mu4 = m (1 + 3 m).
    assert abs(draws.var() - mean) < 4.5 * math.sqrt((mean * (1 + 3 * mean) - mean**2) / n)
    assert np.all(draws == np.round(draws))
    assert draws.min() == 0 or mean > 10


def test_same_generator_same_counts_and_one_uniform_each() -> None:
    """Reproducible from the seed; each count consumes exactly one uniform, so the draws that
    follow on the same generator do not depend on the counts drawn."""
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(
        poisson_inverted(3.0, (30, 7), a), poisson_inverted(3.0, (30, 7), b)
    )
    c = np.random.default_rng(5)
    c.random((30, 7))
    assert a.random() == c.random()
    assert poisson_inverted(1.0, (0, 3), a).shape == (0, 3)


def test_each_uniform_maps_to_the_smallest_count_whose_cdf_exceeds_it() -> None:
    """Uniforms on and either side of cumulative probabilities, and the largest double below
    1 (it lands on the table's last count, not past it)."""
    cdf = np.cumsum([math.exp(-2.0) * 2.0**k / math.factorial(k) for k in range(8)])
    u = np.array([0.0, cdf[0] - 1e-12, cdf[0] + 1e-12, cdf[3] - 1e-12, cdf[3] + 1e-12])
    np.testing.assert_array_equal(inverse_poisson(u, 2.0), [0, 0, 1, 3, 4])
    top = inverse_poisson(np.array([np.nextafter(1.0, 0.0)]), 2.0)
    assert 20 <= top[0] <= int(2 + 10 * math.sqrt(2) + 12)


def test_columns_draw_each_mean_as_its_own_table_would() -> None:
    """A mean per column, real-valued, 0 included: each column is the count its own table
    gives the same uniform (so it follows the Poisson probabilities the test above checks), one
    uniform each; a mean of 0 draws 0. A guide one row off, or a shift that lets a row's guide
    point into the next row, fails."""
    means = np.array([0.0, 0.05, 0.3, 1.0, 2.5, 6.0, 12.3, 29.9, 30.0, 7.7])
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    drawn = poisson_columns(means, 20_000, a)
    u = b.random((20_000, means.size))
    assert a.random() == b.random()
    assert drawn.shape == (20_000, means.size)
    assert not drawn[:, 0].any()
    for j, mean in enumerate(means[1:], start=1):
        np.testing.assert_array_equal(drawn[:, j], inverse_poisson(u[:, j].copy(), float(mean)))
        assert abs(drawn[:, j].mean() - mean) < 4.5 * math.sqrt(mean / drawn.shape[0])
    assert poisson_columns(means, 0, a).shape == (0, means.size)


def test_poisson_or_normal_draws_small_means_by_inversion_and_large_ones_as_normals() -> None:
    """Columns below NORMAL_ABOVE are poisson_columns' counts; the others normal with the
    Poisson's mean and variance, never below 0; means of 0 draw 0."""
    means = np.array([0.0, 3.0, 29.9, NORMAL_ABOVE, 400.0, 2e5, 0.0])
    drawn = poisson_or_normal(means, 40_000, np.random.default_rng(4))
    assert drawn.shape == (40_000, means.size)
    assert not drawn[:, [0, -1]].any()
    assert np.all(drawn[:, 1:3] == np.round(drawn[:, 1:3]))  # counts
    assert not np.all(drawn[:, 3:6] == np.round(drawn[:, 3:6]))  # normals
    assert drawn.min() >= 0
    for j, mean in enumerate(means):
        assert abs(drawn[:, j].mean() - mean) < 4.5 * math.sqrt(max(mean, 1e-12) / 40_000)
        assert abs(drawn[:, j].var() / max(mean, 1e-12) - 1) < 0.05 or mean == 0
