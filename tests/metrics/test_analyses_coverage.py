"""Coverage of the analyses' newer intervals: a small, seeded run of bench/analyses_coverage.py
(the table in the README comes from 400 draws; this is 60, so the bounds allow its Monte-Carlo
error of about 3 points)."""

from __future__ import annotations

from bench.analyses_coverage import difference_coverage, trajectory_coverage


def test_trajectory_intervals_cover_the_population_temporal_values() -> None:
    """Temporal precision and AP along a quadrupling fraud rate, against the binormal
    population's values: near the nominal 95%, like the fixed-prior intervals they extend."""
    for coverage in trajectory_coverage(sims=60, replicates=200, rows=20_000, seed=5):
        assert coverage.rate >= 0.85, coverage
        assert coverage.width > 0.0


def test_per_window_difference_intervals_cover_and_are_cautious_on_shadow_traffic() -> None:
    """MOVER from the two windows' own intervals covers the true AP difference on independent
    rows, and at least as often on shadow traffic (the shared rows' errors cancel in part)."""
    independent = difference_coverage(60, 200, 20_000, 5, shadow=False)
    shadow = difference_coverage(60, 200, 20_000, 5, shadow=True)
    assert independent.rate >= 0.85, independent
    assert shadow.rate >= 0.9, shadow
