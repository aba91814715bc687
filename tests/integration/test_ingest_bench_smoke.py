"""A small run of bench/ingest.py, so the benchmark keeps working and keeps its shape.

PostgreSQL only: the bench measures the COPY path against its floor. The ratio asked of this
smoke run is deliberately loose (20,000 rows on a shared CI machine are noisy); the real
figures come from the full run of 10^6 rows (``python -m bench.ingest``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.ingest import (
    WITH_FIELDS,
    client_ratio,
    fields_ratios,
    paired_share_interval,
    ratios,
    run,
    save_latencies,
    without_fields,
)
from bench.ingest_client import PATHS
from bench.ingest_client import run as client_run
from bench.ingest_pool import main as pool_main
from bench.ingest_pool import pooled_shares


@pytest.mark.slow
def test_bench_runs_and_the_api_paths_keep_up_with_the_floor(
    backend: str, database_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if backend != "postgresql":
        pytest.skip("the ingestion bench measures PostgreSQL's COPY path")
    results = run(
        database_url, total_rows=20_000, batch_rows=5_000, with_csv=False, row_fields=True
    )
    found = ratios(results)
    assert found["columnar JSON via API"] >= 0.35, capsys.readouterr().out
    assert found["row JSON via API"] >= 0.15, capsys.readouterr().out
    assert client_ratio(results) >= 0.5, capsys.readouterr().out
    assert {result.rows for result in results} == {20_000}
    # The twins with amount and entity ran (their >= 90% is for the full run, not this one).
    assert len(fields_ratios(results)) == 5  # the two floors' twins, the bounds, too
    assert min(fields_ratios(results).values()) >= 0.4, capsys.readouterr().out
    # Each twin's paired interval holds its total-time share.
    by_name = {result.name: result for result in results}
    for twin in (name for name in by_name if name.endswith(WITH_FIELDS)):
        without = by_name[without_fields(twin)]
        low, high = paired_share_interval(without, by_name[twin])
        assert low <= without.seconds / by_name[twin].seconds <= high
    # Pooled over two saved passes (here the same one twice), the share is the pass's.
    saved = tmp_path / "runs.jsonl"
    save_latencies(saved, "sequential", results)
    save_latencies(saved, "sequential", results)
    passes = [{r.name: r.latencies for r in results}] * 2
    for path, (share, low, high) in pooled_shares(passes).items():
        with_fields = by_name[path + WITH_FIELDS]
        assert share == pytest.approx(by_name[path].seconds / with_fields.seconds)
        assert low <= share <= high
    assert pool_main([str(saved)]) == 0
    assert "2 passes, 8 batch rounds pooled" in capsys.readouterr().out


@pytest.mark.slow
def test_client_bench_runs(backend: str, database_url: str) -> None:
    """bench/ingest_client.py keeps working: the client and `calmon send` (CSV, Parquet) beside
    columnar JSON, interleaved. A small run is too noisy for a ratio; the full runs' are in
    the README."""
    if backend != "postgresql":
        pytest.skip("the ingestion bench measures PostgreSQL's COPY path")
    results, shares, start = client_run(
        database_url, total_rows=4_000, batch_rows=1_000, parts=2, runs=2
    )
    assert {len(values) for values in shares.values()} == {4}  # 2 parts x 2 runs
    assert len(results) == 2
    assert all(run[path] > 0 for run in results for path in PATHS)
    assert start > 0
