"""The convolution scan of rank inversion (large pooled curves) finds what the exact scan finds."""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics.skew import rank_inversion_skews
from tests.support.rank_curves import (
    ONE_CROSSING,
    TWO_CROSSINGS,
    empirical_curve,
    exact_flips,
)

EXACT = 10**15  # fast_above past any size: always the exact scan
FAST = 0  # always the convolution scan

THREE_CROSSINGS = (
    ([0.48, 0.85, 1.0], [2 / 6000, 83 / 6000, 1.0]),
    ([0.66, 1.0], [5 / 6000, 1076 / 6000]),
)


@pytest.mark.parametrize(("a", "b"), [ONE_CROSSING, TWO_CROSSINGS, THREE_CROSSINGS])
def test_fast_scan_finds_every_known_crossing(
    a: tuple[list[float], list[float]], b: tuple[list[float], list[float]]
) -> None:
    """Constructed curves crossing 1, 2 and 3 times: the polynomial's roots to 1e-8 either way
    (the degree-7 polynomial's own roots are that accurate), and both scans agree to 1e-11."""
    exact = exact_flips(a, b)
    fast = rank_inversion_skews(a, b, fast_above=FAST)
    assert fast == pytest.approx(exact, rel=1e-8)
    assert rank_inversion_skews(a, b, fast_above=EXACT) == pytest.approx(fast, rel=1e-11)


@pytest.mark.parametrize("seed", range(8))
def test_fast_scan_matches_the_exact_scan_on_random_curves(seed: int) -> None:
    """400-positive empirical curves (binormal, different variances): the same flips."""
    rng = np.random.default_rng(seed)
    a = empirical_curve(rng, 400, 1.5, 2.0)
    b = empirical_curve(rng, 400, 1.5, 0.7)
    fast = rank_inversion_skews(a, b, fast_above=FAST)
    exact = rank_inversion_skews(a, b, fast_above=EXACT)
    assert fast.size == exact.size
    assert fast == pytest.approx(exact, rel=1e-9)
