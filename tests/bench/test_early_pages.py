"""A fast version of bench/early_pages.py: the early pages and estimates on realistic label
feeds (fraud-only, feedback the next day, chargebacks over weeks), the README's tables in small.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.detection import degradation, prior_drift
from bench.early_pages import VARIANTS, Run, _warmup, main, run_stream


@pytest.mark.slow
def test_a_broken_model_pages_on_early_labels_within_days_at_1000_frauds() -> None:
    change = _warmup(1000)
    days = degradation("step", change, change + 8)
    log = run_stream(days, 1000, VARIANTS["base"], seed=11, run=Run())
    first = log.first_page(change + 1)
    assert first is not None
    day, early = first
    assert day - change <= 3  # README: within 3 days in 30 of 30 streams
    assert early  # the broken windows are weeks from maturity: the page rests on early labels
    assert not log.episodes() > 1


@pytest.mark.slow
def test_prior_drift_with_bursts_and_slower_reporting_does_not_page() -> None:
    # A bursty, weekly-cycling stream whose reporting slows down by a third: every page false.
    for seed, variant in ((3, "bursts"), (4, "slower")):
        days = prior_drift("weekly", 160, np.random.default_rng([seed, 7]))
        log = run_stream(days, 100, VARIANTS[variant], seed=seed, run=Run())
        assert log.judged > 50
        assert log.episodes() == 0, variant


@pytest.mark.slow
def test_early_estimates_cover_what_the_complete_labels_show() -> None:
    change = _warmup(100)
    days = prior_drift("day_to_day", change + 25, np.random.default_rng([5, 3]))
    log = run_stream(days, 100, VARIANTS["base"], seed=5, run=Run(score=lambda j: j >= change))
    week = [
        (r.metric, r.value, r.truth, r.interval)
        for r in log.estimates
        if r.look == 7 and r.value is not None and r.truth is not None and r.truth > 0
    ]
    assert len(week) >= 4 * 10
    covered = [i is not None and i[0] <= t <= i[1] for _, _, t, i in week]
    assert np.mean(covered) >= 0.85
    pi = [abs(v - t) / t for metric, v, t, _ in week if metric == "pi"]
    assert np.mean(pi) < 0.25  # README: the early fraud rate's error, a week after the window


@pytest.mark.slow
def test_the_bench_runs_and_prints_its_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sections", "drops", "--streams", "1", "--sizes", "1000"]) == 0
    printed = capsys.readouterr().out
    assert "| 1,000 | step | base | calmon |" in printed
    assert "best possible" in printed
