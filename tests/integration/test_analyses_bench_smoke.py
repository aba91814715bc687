"""Smoke run of bench/analyses.py on PostgreSQL with tiny sizes: the benchmark keeps working."""

from __future__ import annotations

import pytest

from bench import analyses as bench
from tests.support.databases import Backend


def test_analyses_benchmark_runs_and_prints_every_endpoint(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend != "postgresql":
        pytest.skip("the analyses benchmark measures PostgreSQL")
    argv = ["--database-url", database_url, "--windows", "4", "--rows", "2000", "--repeats", "1"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    for endpoint in ("GET /metrics (floor)", "POST /whatif", "GET /compare", "metric-catalogue"):
        assert endpoint in out
    assert "pooled: 4 windows" in out
