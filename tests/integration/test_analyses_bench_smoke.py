"""Smoke run of bench/analyses.py on both databases with tiny sizes: the benchmark keeps working."""

from __future__ import annotations

import pytest

from bench import analyses as bench

# The analyses bench's timing ratios on both backends: about 1 s each (pytest -m "not slow").
pytestmark = pytest.mark.slow


def test_analyses_benchmark_runs_and_prints_every_endpoint(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--database-url", database_url, "--windows", "4", "--rows", "2000", "--repeats", "1"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    for endpoint in ("GET /metrics (floor)", "POST /whatif", "GET /compare", "metric-catalogue"):
        assert endpoint in out
    assert "pooled: 4 windows" in out
