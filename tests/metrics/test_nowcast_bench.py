"""The suite's fast version of bench/nowcast.py: the nowcast on simulated prior drift and score
shifts, with loose versions of the bounds the full bench reports (``python -m bench.nowcast``:
1,000 windows, the quantile sketches and NannyML's CBPE beside it).

Two streams of 20 windows each (their own references), so a coverage of 0.8 to 1.0 here is a
loose check; it still fails if the kernel's intervals or its fit go wrong. Needs neither
nannyml nor datasketches.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import nowcast as bench
from bench import nowcast_bursts as bursts
from bench.label_feeds import FeedConfig

CONFIG = bench.Config(
    streams=2, windows=20, shift_windows=10, replicates=200, summaries=("bins", "oracle")
)


@pytest.fixture(scope="module")
def drift() -> bench.DriftRun:
    return bench.run_drift(CONFIG)


def test_intervals_cover_the_realised_fraud_rate_and_precision(drift: bench.DriftRun) -> None:
    windows = drift.windows
    assert len(windows) == 40
    pis = [w.realised["pi"] for w in windows]
    pi_cover, _ = bench.coverage([w.nowcast.pi_interval for w in windows], pis)
    acc_cover, _ = bench.coverage([w.nowcast.adjusted_count_interval for w in windows], pis)
    precisions = [w.realised["precision"] for w in windows]
    precision_cover, _ = bench.coverage(
        [w.nowcast.intervals["precision"] for w in windows], precisions
    )
    assert 0.8 <= pi_cover <= 1.0
    assert 0.8 <= acc_cover <= 1.0
    assert 0.8 <= precision_cover <= 1.0
    # The full bench's target is |mean| < 0.02 over 1,000 windows; 40 windows are noisier.
    # Maximum likelihood is all but unbiased: a 10% bias in pi shows over 40 windows.
    assert abs(bench.errors([w.nowcast.pi for w in windows], pis).sum() / sum(pis)) < 0.06
    precision_error = bench.errors([w.nowcast.expected["precision"] for w in windows], precisions)
    assert abs(precision_error.mean()) < 0.03
    assert bench.rmse(precision_error) < 0.05


def test_pure_prior_drift_rarely_warns(drift: bench.DriftRun) -> None:
    """The worker's rule: the window alone, or with up to six windows before it."""
    assert sum(w.warned for w in drift.windows) <= 1
    assert all(w.recent is not None for w in drift.windows if w.position > 0)


def test_calmon_bins_are_about_as_accurate_as_the_exact_scores(drift: bench.DriftRun) -> None:
    """calmon's bins against maximum likelihood on the exact scores with the true densities."""
    truths = [w.realised["pi"] for w in drift.windows]
    bins = bench.rmse(bench.errors([r.pi for r in drift.summaries["bins"]], truths))
    exact = bench.rmse(bench.errors([r.pi for r in drift.summaries["oracle"]], truths))
    assert bins < 1.5 * exact
    table = list(bench.summary_table(drift, CONFIG))
    assert any(line.startswith("| calmon's bins") for line in table)


def test_a_shift_of_the_legitimate_scores_warns_in_its_first_window(drift: bench.DriftRun) -> None:
    scenario = bench.SHIFTS[0]
    windows = bench.run_shift(CONFIG, scenario, tag=2)
    assert len(windows) == 10
    # Each window alone: the first one after the shift is as likely caught as any other.
    assert sum(w.warned_alone for w in windows) >= 9
    table = list(bench.shift_table(drift, [(scenario, windows)]))
    assert len(table) == 4
    # The dispersion costs the legitimate shift nothing: the rule with independent rows
    # assumed warns on the same windows.
    assert [w.warned for w in windows] == [w.warned_independent for w in windows]


def test_cbpe_is_given_probabilities_calibrated_on_the_reference(tmp_path: Path) -> None:
    """What the peer reads: the Bayes posterior at the reference's prior, whose mean on the
    reference is its fraud share, and one day per window."""
    config = bench.Config(streams=1, windows=2)
    bench.export_for_peer(config, tmp_path)
    data = np.load(tmp_path / "stream_000.npz")
    assert data["ref_proba"].size == bench.REFERENCE_WINDOWS * bench.ROWS
    assert data["ref_proba"].mean() == pytest.approx(data["ref_label"].mean(), rel=0.15)
    assert np.unique(data["ana_day"]).tolist() == [0, 1]
    assert (data["ana_pred"] == (data["ana_proba"] >= bench.posterior(np.array([2.0]))[0])).all()


def test_bursts_of_frauds_no_longer_cry_wolf() -> None:
    """Table 6's stress row, small: frauds in bursts of 8 scoring nearly alike (correlation
    0.95) on a steady healthy stream of 100 frauds a day. With independent rows assumed the
    worker's rule warned on 24% of such days (bench, 500 windows); with the reference's
    dispersion divided out on 0.2%. Two streams of 40 days here."""
    feed = FeedConfig(burst_mean=8.0, burst_correlation=0.95)
    runs = [bursts.run_stream("steady", 100, feed, seed=seed, windows=40) for seed in range(2)]
    before = sum(sum(c.before) for c in runs)
    after = sum(sum(c.after) for c in runs)
    assert before >= 8  # the problem is there: about 19 expected
    assert after <= 1
    assert all(c.dispersion.tilt > 4.0 for c in runs)  # Kish's design effect: about 8.5
    table = list(
        bursts.bursts_table(
            bursts.BurstConfig(
                streams=1, windows=10, bursts=(1.0,), sizes=(25,), scenarios=("steady",), stress=()
            )
        )
    )
    assert table[1] == bursts.HEADER
    assert table[3].startswith("| 1 (none) | steady | 25 |")
