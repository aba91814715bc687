"""Smoke runs of bench/worker_floor.py and bench/worker_digest.py on PostgreSQL with tiny sizes:
the benchmarks keep working, and the digest is reproducible (two drains of the same seeded
stream store the same numbers, which is what makes it a before/after check)."""

from __future__ import annotations

import pytest

from bench import worker_digest, worker_floor
from tests.support.databases import Backend

pytestmark = pytest.mark.slow


def test_fixed_cost_benchmark_runs_and_prints_ratios(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend != "postgresql":
        pytest.skip("the worker benchmark measures PostgreSQL")
    argv = ["--database-url", database_url, "--rows", "10000", "--many-rows", "20000"]
    argv += ["--many-segments", "4", "--repeats", "1", "--replicates", "200"]
    assert worker_floor.main(argv) == 0
    assert capsys.readouterr().out.count("ratio worker / floor:") == 2


def test_the_digest_of_a_seeded_stream_is_reproducible(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend != "postgresql":
        pytest.skip("the digest's stream is generated inside PostgreSQL")
    argv = ["--database-url", database_url, "--windows", "24", "--rows", "6000"]
    argv += ["--segments", "2", "--replicates", "200"]
    assert worker_digest.main(argv) == 0
    first = capsys.readouterr().out
    assert worker_digest.main(argv) == 0
    assert capsys.readouterr().out == first
    assert " 0 judged" not in first, first  # the stream reaches the detector
