"""Smoke run of bench/segment_coverage.py: on independent rows the segment comparison's
intervals hold the truth most of the time even in 40 periods (the full table is in the docs)."""

from __future__ import annotations

import pytest

from bench.segment_coverage import VARIANTS, Run, coverage, main

pytestmark = pytest.mark.slow


def test_the_quick_table_prints() -> None:
    assert main(["--quick"]) == 0


def test_independent_rows_are_mostly_covered() -> None:
    found = coverage(VARIANTS[0], 100, Run(periods=40, replicates=200, population=1_000_000))
    # 95% intervals: 40 periods put a true 93% at 84%-100% (two binomial standard errors).
    for kind, values in found.items():
        assert min(values.values()) >= 0.8, (kind, values)
