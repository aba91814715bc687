"""Smoke runs of bench/worker_floor.py, bench/worker_digest.py, bench/peers_job.py and
bench/worker_memory.py on PostgreSQL with tiny sizes: the benchmarks keep working, and the
digest is reproducible (two drains of the same seeded stream store the same numbers, which is
what makes it a before/after check), with and without amounts and cards."""

from __future__ import annotations

import pytest

from bench import peers_job, worker_digest, worker_floor, worker_memory
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
    assert worker_digest.main([*argv, "--by-column"]) == 0
    again = capsys.readouterr().out.splitlines()
    # The same tables' digests, and beside them each column's (which values a change moved).
    assert [line for line in again if "." not in line.split()[0]] == first.splitlines()
    assert any(line.split()[0] == "window_metrics.nowcast" for line in again[1:]), again
    assert " 0 judged" not in first, first  # the stream reaches the detector


def test_the_digest_with_amounts_and_cards_is_reproducible(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--fields`` (seeded amounts and cards, a budget, a review cost): two drains store the
    same numbers, and not those of the stream without the fields (the money and card metrics
    are in the digest)."""
    if backend != "postgresql":
        pytest.skip("the digest's stream is generated inside PostgreSQL")
    argv = ["--database-url", database_url, "--windows", "6", "--rows", "3000"]
    argv += ["--segments", "2", "--replicates", "100"]
    assert worker_digest.main([*argv, "--fields"]) == 0
    first = capsys.readouterr().out
    assert worker_digest.main([*argv, "--fields"]) == 0
    assert capsys.readouterr().out == first
    assert worker_digest.main(argv) == 0
    plain = capsys.readouterr().out.splitlines()
    values = [line for line in first.splitlines() if line.split()[0] == "window_metric_values"]
    assert values
    assert values[0] not in plain


def test_the_peers_job_runs_and_prints_its_table(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/peers_job.py on a small stream; the NannyML peer only where its virtualenv is
    (CALMON_NANNYML_PYTHON), as in the full run."""
    if backend != "postgresql":
        pytest.skip("the worker benchmark measures PostgreSQL")
    argv = ["--database-url", database_url, "--rows", "12000", "--windows", "12"]
    argv += ["--rounds", "1", "--replicates", "200", "--reference-days", "4"]
    assert peers_job.main(argv) == 0
    out = capsys.readouterr().out
    assert "calmon worker, claim -> stored" in out, out
    assert "floor: read + evaluate per part" in out, out


def test_one_large_window_reports_its_memory(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/worker_memory.py with a small window: each way in a child process, its peak
    memory above its start, per row."""
    if backend != "postgresql":
        pytest.skip("the worker benchmark measures PostgreSQL")
    argv = ["--database-url", database_url, "--rows", "50000", "--repeats", "1"]
    assert worker_memory.main([*argv, "--replicates", "200"]) == 0
    out = capsys.readouterr().out
    assert out.count("bytes per row") == 1, out
    assert "ratio worker / floor:" in out, out
