"""Smoke run of bench/worker.py on PostgreSQL with tiny sizes: the benchmark keeps working."""

from __future__ import annotations

import re

import pytest

from bench import worker as bench
from tests.support.databases import Backend

# The worker bench's timing ratios on PostgreSQL: about 2 s (pytest -m "not slow" skips it).
pytestmark = pytest.mark.slow


def test_worker_benchmark_runs_and_prints_ratios(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend != "postgresql":
        pytest.skip("the worker benchmark measures PostgreSQL")
    argv = ["--database-url", database_url, "--window-rows", "20000", "--series-windows", "4"]
    argv += ["--series-rows", "3000", "--repeats", "1", "--series-repeats", "1"]
    argv += ["--replicates", "200"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "ratio worker / floor:" in out
    assert re.search(r"total time over the repeats: [0-9.]+ \(95% interval [0-9.]+-[0-9.]+\)", out)
    # Even at this size, moving pi0 must cost a fraction of recomputing from raw rows (the full
    # run's target is 1%; a few windows are dominated by fixed per-statement costs).
    found = re.search(r"ratio sketches / raw rows: ([0-9.]+)%", out)
    assert found is not None
    assert float(found.group(1)) < 50.0, out
