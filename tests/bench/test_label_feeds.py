"""bench/label_feeds.py's feeds, measured: each property the lead's estimators rely on is drawn
from seeded streams and compared with what it should be, within a few standard errors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri
from scipy.stats import chi2, kstest

from app.metrics import build_sketch, evaluate_sketch
from bench.detection import Day, prior_drift
from bench.label_feeds import (
    CHARGEBACK,
    FEEDBACK,
    NEVER,
    FeedConfig,
    SimWindow,
    Stream,
    labelled_by,
    simulate,
)
from bench.label_feeds_draws import final_sketch, partition, queue_mean
from bench.label_feeds_report import describe
from bench.simulation import HEALTHY_MU, THRESHOLD, mu_for, population_average_precision

STEADY = prior_drift("steady", 200, np.random.default_rng(0))
SIGMA, MEDIAN, HORIZON = 0.8, 12.0, 60.0
Array = npt.NDArray[Any]


@pytest.fixture(scope="module")
def plain() -> Stream:
    return simulate(STEADY, 100, FeedConfig(), seed=11)


@pytest.fixture(scope="module")
def bursts() -> Stream:
    return simulate(STEADY, 100, FeedConfig(burst_mean=4.0, feedback_by_score=True), seed=12)


def _cat(stream: Stream, pick: Callable[[SimWindow], Array]) -> Array:
    return np.concatenate([pick(w) for w in stream.windows])


def _delays(w: SimWindow) -> Array:
    """Chargebacks' delays from their transactions, in days."""
    charged = w.fraud_sources == CHARGEBACK
    out: Array = w.fraud_arrival_days[charged] + 1.0 - w.fraud_times[charged]
    return out


def _truncated_cdf(x: float | Array, median: Array) -> Array:
    """The delay's CDF: log-normal (``median``, SIGMA) conditioned on <= HORIZON."""
    reach = ndtr(np.log(HORIZON / median) / SIGMA)
    cdf: Array = np.minimum(ndtr(np.log(x / median) / SIGMA) / reach, 1.0)
    return cdf


def _pooled_median(medians: Array) -> float:
    """The median of the delays pooled over claims of these log-normal medians."""
    return float(brentq(lambda x: _truncated_cdf(x, medians).mean() - 0.5, 1e-3, HORIZON))


def _legit_per_bin(stream: Stream) -> Array:
    size = stream.edges.size + 1
    per_window = [
        w.rows_per_bin - np.bincount(w.fraud_bins, minlength=size) for w in stream.windows
    ]
    total: Array = np.sum(per_window, axis=0)
    return total


def _within(measured: float, expected: float, se: float, k: float = 4.0) -> None:
    assert abs(measured - expected) <= k * se, (measured, expected, se)


# --- feedback ------------------------------------------------------------------------------------


def test_feedback_reviews_the_share_of_flagged_rows_and_arrives_within_the_next_day(
    plain: Stream,
) -> None:
    flagged_rows = sum(w.flagged for w in plain.windows)
    scores = _cat(plain, lambda w: w.fraud_scores)
    sources = _cat(plain, lambda w: w.fraud_sources)
    reviewed = int(np.sum(sources == FEEDBACK)) + sum(w.cleared_bins.size for w in plain.windows)
    _within(reviewed / flagged_rows, 0.9, math.sqrt(0.09 / flagged_rows))
    assert not np.any((sources == FEEDBACK) & (scores < THRESHOLD))  # only alerts are reviewed
    arrivals = np.concatenate(
        [_cat(plain, lambda w: w.fraud_arrival_days[w.fraud_sources == FEEDBACK])]
        + [w.cleared_arrival_days for w in plain.windows]
    )
    assert arrivals.min() >= 0.0
    assert arrivals.max() < 1.0
    _within(float(np.mean(arrivals)), 0.5, math.sqrt(1 / 12 / arrivals.size))


@pytest.mark.parametrize("share", [0.0, 0.3, 0.5, 0.9, 1.0])
def test_the_review_ramp_falls_with_the_queue_and_averages_the_share(share: float) -> None:
    cuts = np.linspace(0.0, 1.0, 1001)
    ramp = queue_mean(cuts[:-1], cuts[1:], share)
    assert ramp.mean() == pytest.approx(share, abs=1e-9)
    assert np.all(np.diff(ramp) <= 1e-12)
    assert np.all((ramp >= 0.0) & (ramp <= 1.0))
    assert ramp[0] == pytest.approx(1.0 if share > 0 else 0.0, abs=1e-3)


def test_feedback_by_score_keeps_the_share_and_rises_with_the_score(bursts: Stream) -> None:
    edges, windows = bursts.edges, bursts.windows
    flagged_rows = sum(w.flagged for w in windows)
    scores = _cat(bursts, lambda w: w.fraud_scores)
    sources = _cat(bursts, lambda w: w.fraud_sources)
    reviewed_frauds = int(np.sum(sources == FEEDBACK))
    cleared = sum(w.cleared_bins.size for w in windows)
    _within((reviewed_frauds + cleared) / flagged_rows, 0.9, math.sqrt(0.09 / flagged_rows))
    # Per bin above the threshold, the legitimate rows' review rate never falls with the score.
    first = int(np.searchsorted(edges, THRESHOLD)) + 1
    legit = _legit_per_bin(bursts)
    done = np.sum([np.bincount(w.cleared_bins, minlength=edges.size + 1) for w in windows], axis=0)
    rows, rate = legit[first:], done[first:] / np.maximum(legit[first:], 1)
    se = np.sqrt(0.25 / np.maximum(rows, 1))
    assert np.all(np.diff(rate) >= -3 * np.hypot(se[1:], se[:-1]))
    # The ramp: ~0.83 in the queue's last bin, ~1 at its top.
    assert rate[0] < 0.86
    assert np.sum(done[-3:]) / np.sum(legit[-3:]) > 0.95
    # Frauds sit higher in the queue than legitimate alerts: more of them are reviewed.
    assert reviewed_frauds / np.sum(scores >= THRESHOLD) > 0.93
    assert cleared / legit[first:].sum() < 0.9


# --- chargebacks ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("speed_change", "misses_slower"), [(0.0, 1.0), (-1 / 3, 1.0), (1 / 3, 1.0), (0.0, 2.0)]
)
def test_chargeback_delays_follow_the_truncated_lognormal(
    speed_change: float, misses_slower: float
) -> None:
    """Each delay, through its own claim's CDF (median 12 x the speed factor x misses_slower
    for a missed fraud, conditioned on the horizon), is uniform; the first and last tenths of
    the run have the medians that follow; none is past the horizon."""
    config = FeedConfig(speed_change=speed_change, misses_slower=misses_slower)
    stream = simulate(STEADY, 100, config, seed=21)
    runs = len(stream.windows) - 1
    delays, medians = [], []
    for w in stream.windows:
        charged = w.fraud_sources == CHARGEBACK
        slower = np.where(w.fraud_scores[charged] >= THRESHOLD, 1.0, misses_slower)
        delays.append(_delays(w))
        medians.append(MEDIAN * (1 + speed_change * w.index / runs) * slower)
    assert min(d.min() for d in delays) > 0.0
    assert max(d.max() for d in delays) <= HORIZON
    u = np.concatenate([_truncated_cdf(d, m) for d, m in zip(delays, medians, strict=True)])
    assert kstest(u, "uniform").pvalue > 1e-3
    for part in (slice(0, 20), slice(-20, None)):
        pooled, m = np.concatenate(delays[part]), np.concatenate(medians[part])
        expected = _pooled_median(m)
        # The median's standard error: sqrt(p(1 - p) / n) over the density at the median.
        density = (_pooled_median_cdf_slope(expected, m)) * math.sqrt(pooled.size)
        _within(float(np.median(pooled)), expected, 0.5 / density)


def _pooled_median_cdf_slope(x: float, medians: Array) -> float:
    h = 1e-4 * x
    return float(
        (_truncated_cdf(x + h, medians).mean() - _truncated_cdf(x - h, medians).mean()) / (2 * h)
    )


def test_the_horizon_redraws_the_tail_instead_of_piling_it_on_the_horizon() -> None:
    """Reporting slowed by a third puts ~5% of the log-normal past 60 days: none lands there,
    and the last days before the horizon hold no more than the days before them."""
    stream = simulate(STEADY, 100, FeedConfig(speed_change=1 / 3), seed=22)
    delays = np.concatenate([_delays(w) for w in stream.windows])
    assert delays.max() <= HORIZON
    last, before = (
        np.sum(delays > HORIZON - 1),
        np.sum((delays > HORIZON - 2) & (delays <= HORIZON - 1)),
    )
    assert last <= before + 4 * math.sqrt(before + 1)


def test_about_three_percent_of_unreviewed_frauds_are_never_reported(plain: Stream) -> None:
    sources = _cat(plain, lambda w: w.fraud_sources)
    unreviewed = sources[sources != FEEDBACK]
    share = float(np.mean(unreviewed == NEVER))
    _within(share, 0.03, math.sqrt(0.03 * 0.97 / unreviewed.size))
    assert np.all(np.isinf(_cat(plain, lambda w: w.fraud_arrival_days[w.fraud_sources == NEVER])))


# --- frauds and bursts ---------------------------------------------------------------------------


@pytest.mark.parametrize("burst_mean", [1.0, 4.0])
def test_frauds_per_window_average_pi_n(burst_mean: float) -> None:
    """pi moves 20x day to day; the frauds follow it: their total is sum(pi N) within the
    compound Poisson's error (entities ~ Poisson(pi N / b), sizes 1 + Poisson(b - 1))."""
    days = prior_drift("day_to_day", 300, np.random.default_rng(3))
    stream = simulate(days, 25, FeedConfig(burst_mean=burst_mean), seed=31)
    expected = sum(d.pi * w.rows for d, w in zip(days, stream.windows, strict=True))
    second_moment = (burst_mean - 1.0) + burst_mean**2
    se = math.sqrt(expected / burst_mean * second_moment)
    _within(sum(w.frauds for w in stream.windows), expected, se)


def test_bursts_have_the_mean_size_shared_scores_and_one_claim_instant(bursts: Stream) -> None:
    entities = _cat(bursts, lambda w: w.fraud_entities)
    _, sizes = np.unique(entities, return_counts=True)
    _within(float(sizes.mean()), 4.0, math.sqrt(3.0 / sizes.size))
    # Ids are unique within the stream: no entity spans two windows.
    per_window = [set(np.unique(w.fraud_entities).tolist()) for w in bursts.windows]
    assert sum(map(len, per_window)) == len(set().union(*per_window))
    # The first two frauds of each entity: their scores correlate at rho = 0.5, variance 1.
    scores = _cat(bursts, lambda w: w.fraud_scores)
    starts = np.flatnonzero(np.concatenate(([True], entities[1:] != entities[:-1])))
    pairs = starts[starts + 1 < entities.size]
    pairs = pairs[entities[pairs + 1] == entities[pairs]]
    rho = np.corrcoef(scores[pairs], scores[pairs + 1])[0, 1]
    _within(float(rho), 0.5, (1 - 0.25) / math.sqrt(pairs.size))
    _within(float(scores.std()), 1.0, 0.03)
    # An entity's chargebacks: one instant; filed together or not at all.
    for w in bursts.windows:
        waiting = w.fraud_sources != FEEDBACK
        for entity in np.unique(w.fraud_entities[waiting]):
            mine = w.fraud_arrival_days[waiting & (w.fraud_entities == entity)]
            assert np.all(mine == mine[0])


# --- the window's counts -------------------------------------------------------------------------


def _rows_at_or_above_threshold(w: SimWindow) -> int:
    s = w.final
    upto = s.threshold_index + 1
    return int((s.positives_at[:upto] + s.negatives_tied[:upto] + s.negatives_between[:upto]).sum())


def test_bin_counts_and_the_final_sketch_agree(bursts: Stream) -> None:
    edges = bursts.edges
    threshold_bin = int(np.searchsorted(edges, THRESHOLD)) + 1  # bins from it up: >= threshold
    for w in bursts.windows:
        frauds_per_bin = np.bincount(w.fraud_bins, minlength=edges.size + 1)
        assert w.rows_per_bin.sum() == w.rows == w.final.n
        assert np.all(w.rows_per_bin >= frauds_per_bin)
        assert w.rows_per_bin[threshold_bin:].sum() == w.flagged == _rows_at_or_above_threshold(w)
        assert w.frauds == w.fraud_scores.size
        assert np.array_equal(w.fraud_bins, np.searchsorted(edges, w.fraud_scores, side="right"))
        reported = w.fraud_scores[w.fraud_sources != NEVER]
        assert w.final.positives == reported.size
        positives = np.repeat(w.final.scores, w.final.positives_at)
        assert np.array_equal(positives, np.sort(reported)[::-1])
        cleared = np.bincount(w.cleared_bins, minlength=edges.size + 1)
        assert cleared[:threshold_bin].sum() == 0
        assert np.all(cleared <= w.rows_per_bin - frauds_per_bin)


def test_legitimate_rows_fill_the_bins_as_the_standard_normal_does(plain: Stream) -> None:
    edges = plain.edges
    legit = _legit_per_bin(plain)
    share = np.diff(np.concatenate(([0.0], ndtr(edges), [1.0])))
    expected = share * legit.sum()
    statistic = float(((legit - expected) ** 2 / expected).sum())
    assert chi2.sf(statistic, edges.size) > 1e-3


def test_the_final_sketch_is_the_sketch_of_the_rows_it_counts() -> None:
    """The sketch from the partition equals ``build_sketch`` of explicit rows: legitimate rows
    anywhere inside their interval, frauds at their scores, never-reported ones negative."""
    rng = np.random.default_rng(5)
    edges = np.array([-1.0, 0.0, 1.0, THRESHOLD, 2.5, 3.0])
    frauds = rng.normal(HEALTHY_MU, 1.0, 40)
    part = partition(rng, 3_000, edges, frauds)
    reported = rng.random(frauds.size) < 0.8
    sketch = final_sketch(part, np.searchsorted(part.points, frauds), reported)
    p = part.points
    inside = np.concatenate(([p[0] - 1.0], (p[:-1] + p[1:]) / 2.0, [p[-1] + 1.0]))
    scores = np.concatenate([np.repeat(inside, part.legit), frauds])
    labels = np.concatenate([np.zeros(int(part.legit.sum()), dtype=np.int64), reported])
    assert sketch == build_sketch(scores, labels, threshold=THRESHOLD)


@pytest.mark.slow  # four streams to the horizon: 0.7-0.9 s each
@pytest.mark.parametrize("relative", [1.0, 0.6])
@pytest.mark.parametrize("never_reported", [0.0, 0.03])
def test_final_calibrated_ap_is_the_populations(relative: float, never_reported: float) -> None:
    """20,000-fraud windows: the final sketches' calibrated AP at pi0 0.005 is Siblini's
    population AP (bench.simulation) within sampling error. With 3% never reported (mostly
    missed, low-scored frauds), the expectation is the population's with each fraud weighted by
    its chance of being reported, measured here and not assumed away (about +0.004)."""
    mu = mu_for(relative)
    days = [Day(0.005, 1.0, {"all": mu})] * 12
    stream = simulate(days, 20_000, FeedConfig(never_reported=never_reported), seed=41)
    aps = np.array(
        [
            evaluate_sketch(w.final, pi0=0.005).calibrated["average_precision"]
            for w in stream.windows
        ]
    )
    expected = _reported_population_ap(mu, never_reported, 0.9)
    if never_reported == 0.0:
        assert expected == pytest.approx(population_average_precision(mu, 0.005), abs=1e-9)
    _within(float(aps.mean()), expected, float(aps.std(ddof=1)) / math.sqrt(aps.size))


def _reported_population_ap(mu: float, never_reported: float, share: float) -> float:
    """bench.simulation.population_average_precision with each fraud weighted by its chance of
    being reported (reviewed if flagged, else charged back unless never reported)."""
    grid = (np.arange(100_000) + 0.5) / 100_000
    scores = mu - ndtri(grid)  # descending
    weight = 1.0 - never_reported * (1.0 - share * (scores >= THRESHOLD))
    tpr = (np.cumsum(weight) - weight / 2.0) / weight.sum()  # the midpoint rule, as there
    fpr = ndtr(-scores)
    precision = 0.005 * tpr / (0.005 * tpr + 0.995 * fpr)
    return float((weight * precision).sum() / weight.sum())


# --- looks and seeds -----------------------------------------------------------------------------


def test_labelled_by_counts_the_labels_arrived_by_then(plain: Stream) -> None:
    for w in plain.windows[:20]:
        nothing = labelled_by(w, -1.0)
        assert nothing.positives.sum() == nothing.negatives.sum() == 0
        day = labelled_by(w, 1.0)
        assert day.positives.sum() >= np.sum(w.fraud_sources == FEEDBACK)
        assert day.negatives.sum() == w.cleared_bins.size
        final = labelled_by(w, HORIZON)
        assert final.positives.sum() == w.final.positives
        assert np.array_equal(final.rows, w.rows_per_bin)
        assert final.unlabelled.min() >= 0


def test_the_same_seed_gives_the_same_stream() -> None:
    config = FeedConfig(burst_mean=2.0, feedback_by_score=True)
    one, two = (simulate(STEADY[:30], 25, config, seed=7) for _ in range(2))
    other = simulate(STEADY[:30], 25, config, seed=8)
    shorter = simulate(STEADY[:10], 25, config, seed=7)
    assert np.array_equal(one.edges, two.edges)
    assert all(_same(a, b) for a, b in zip(one.windows, two.windows, strict=True))
    assert all(_same(a, b) for a, b in zip(one.windows, shorter.windows, strict=False))
    assert not any(_same(a, b) for a, b in zip(one.windows, other.windows, strict=True))


def _same(a: SimWindow, b: SimWindow) -> bool:
    return all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(vars(a).values(), vars(b).values(), strict=True)
    )


def test_describe_prints_a_row_per_feed_and_group() -> None:
    lines: list[str] = []
    describe(size=25, windows=20, seed=1, out=lines.append)
    arrivals = [line for line in lines if line.startswith("| default |")]
    assert len(arrivals) == 3  # two arrival rows and the review row
    assert [line.split(" | ")[1] for line in arrivals[:2]] == ["flagged", "not flagged"]
    assert sum(line.startswith("| burst_mean 4 |") for line in lines) == 3


def test_a_config_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="burst_mean >= 1"):
        FeedConfig(burst_mean=0.5)
    with pytest.raises(ValueError, match="misses_slower >= 1"):
        FeedConfig(misses_slower=0.9)
