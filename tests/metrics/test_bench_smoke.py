"""Smoke run of bench/kernel.py at n = 10^5 with generous bounds (the full bench is on demand).

At this size fixed per-call costs weigh more than at the benchmark's n = 10^6, so the bounds
are loose versions of the targets; they still fail if a change adds a pass over the rows or an
O(n) step to the sketch path.
"""

from __future__ import annotations

from bench.kernel import run


def test_kernel_bench_smoke() -> None:
    result = run(100_000, repeats=3)
    assert result.evaluate_over_sort < 6.0
    assert result.sklearn_over_evaluate > 3.0
    assert result.resketch_over_evaluate < 0.5
    # 1,000 replicates over ~500 sketch entries: bounded by the sketch, not by n.
    assert result.bootstrap_s < 1.0
