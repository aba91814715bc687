"""The card bootstrap's Poisson(1) weights: the distribution numpy's sampler draws, faster."""

from __future__ import annotations

import math

import numpy as np

from app.metrics._poisson_one import poisson_ones


def test_counts_follow_the_poisson_one_probabilities() -> None:
    """Four million draws: every count's frequency within 4.5 standard errors of exp(-1)/k!,
    and the mean and variance 1 (a sampler off by one bound, or with a bound's probability
    wrong by 2e-3, fails)."""
    draws = poisson_ones((4000, 1000), np.random.default_rng(11)).ravel()
    n = draws.size
    for k in range(9):
        p = math.exp(-1.0) / math.factorial(k)
        frequency = float(np.mean(draws == k))
        assert abs(frequency - p) < 4.5 * math.sqrt(p * (1 - p) / n), k
    assert abs(draws.mean() - 1.0) < 4.5 / math.sqrt(n)
    assert abs(draws.var() - 1.0) < 4.5 * math.sqrt(3.0 / n)  # the variance's SE: sqrt(3/n)
    assert np.all(draws == np.round(draws))
    assert draws.min() == 0


def test_same_generator_same_counts_and_one_uniform_each() -> None:
    """Reproducible from the seed; each count consumes exactly one uniform, so the draws that
    follow on the same generator do not depend on the counts drawn."""
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(poisson_ones((30, 7), a), poisson_ones((30, 7), b))
    c = np.random.default_rng(5)
    c.random((30, 7))
    assert a.random() == c.random()
    assert poisson_ones((0, 3), a).shape == (0, 3)
