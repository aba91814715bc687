"""Smoke run of bench/metrics_scrape.py at a tiny size: the benchmark keeps working, and its
row says what a small scrape holds (one rendering for the concurrent scrapers)."""

from __future__ import annotations

import pytest

from bench import metrics_scrape as bench

# A real server scraped repeatedly for its timing ratios: about 7 s (pytest -m "not slow" skips it).
pytestmark = pytest.mark.slow


def test_the_scrape_benchmark_runs_and_shares_one_rendering(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--sizes", "2x3", "--budgets", "default", "--scrapers", "3"]
    assert bench.main(argv) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 2 x 3")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "default"
    assert int(cells[2].replace(",", "")) > 6 * 100  # every (model, segment)'s series
    assert cells[6] == "1"  # the three scrapers shared one rendering
