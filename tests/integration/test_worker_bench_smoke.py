"""Smoke run of bench/worker.py on PostgreSQL with tiny sizes: the benchmark keeps working."""

from __future__ import annotations

import pytest

from bench import worker as bench
from tests.support.databases import Backend


def test_worker_benchmark_runs_and_prints_ratios(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend != "postgresql":
        pytest.skip("the worker benchmark measures PostgreSQL")
    argv = ["--database-url", database_url, "--window-rows", "20000", "--series-windows", "4"]
    argv += ["--series-rows", "3000", "--repeats", "1", "--replicates", "200"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "ratio worker / floor:" in out
    assert "ratio sketches / raw rows:" in out
