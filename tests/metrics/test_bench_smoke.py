"""Smoke run of bench/kernel.py at n = 10^5 with generous bounds (the full bench is on demand).

Only ratios measured in the same run are bounded here (a slower machine slows both sides);
absolute seconds are the benchmark's to print.

At this size fixed per-call costs weigh more than at the benchmark's n = 10^6, so the bounds
are loose versions of the targets; they still fail if a change adds a pass over the rows or an
O(n) step to the sketch path.
"""

from __future__ import annotations

from bench.kernel import BenchResult, run


def _within_bounds(result: BenchResult) -> bool:
    return (
        result.evaluate_over_sort < 6.0
        and result.sklearn_over_evaluate > 3.0
        and result.resketch_over_evaluate < 0.5
    )


def test_kernel_bench_smoke() -> None:
    # Up to three runs: at 10^5 rows an evaluate takes about a millisecond, and on a shared
    # machine (the suite's other worker, a database beside it) every repeat of one run was once
    # slowed tenfold (evaluate 13 ms against a 0.6 ms sort, where the ratio is 2.2 when quiet).
    # A change past the bounds fails all three.
    result = run(100_000, repeats=5)
    for _ in range(2):
        if _within_bounds(result):
            break
        result = run(100_000, repeats=5)
    assert _within_bounds(result), result
    # The bootstrap resamples the sketch, which holds one entry per positive (and one for the
    # threshold), not one per row: its work is bounded by the positives, not by n. Its seconds
    # are bench/kernel.py's to report (bootstrap1000/evaluate), not the suite's to assert.
    assert result.sketch_entries <= result.positives + 1 < result.n // 100
