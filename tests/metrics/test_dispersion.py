"""The frauds' dispersion (app.metrics.misfit.reference_dispersion) and the misfit tests that
divide it out: estimated about 1 on independent rows, about Kish's design effect on bursts of
frauds, and deflating only what the frauds carry, more so at a higher fraud rate."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from app.metrics import InvalidInputError, ScoreHistogram
from app.metrics.burst_dispersion import NO_DISPERSION, SPREAD_POINTS, Dispersion
from app.metrics.misfit import (
    MIN_TILT_WINDOWS,
    Fit,
    chi2_sf,
    f_sf,
    goodness_of_fit,
    reference_dispersion,
)
from app.metrics.mixture import bin_edges
from app.metrics.types import Float64Array
from bench.detection import prior_drift
from bench.label_feeds import NEVER, FeedConfig, simulate

THRESHOLD, ROWS, WINDOWS = 2.0, 20_000, 14


def _independent(
    rng: np.random.Generator, pi: float = 0.005
) -> tuple[Float64Array, list[ScoreHistogram]]:
    """Fourteen labelled windows of independent rows (legitimate N(0, 1), frauds N(2.5, 1))."""
    labels = rng.random((WINDOWS, ROWS)) < pi
    scores = rng.standard_normal((WINDOWS, ROWS)) + np.where(labels, 2.5, 0.0)
    edges = bin_edges(scores[0], THRESHOLD)
    return edges, [ScoreHistogram.of(edges, s, y, []) for s, y in zip(scores, labels, strict=True)]


def _bursty(
    seed: int, burst: float, correlation: float
) -> tuple[Float64Array, list[ScoreHistogram]]:
    """Fourteen days of bench/label_feeds.py's bursts (100 frauds a day), labels complete."""
    days = prior_drift("steady", WINDOWS, np.random.default_rng(seed))
    stream = simulate(days, 100, FeedConfig(burst_mean=burst, burst_correlation=correlation), seed)
    windows = []
    for w in stream.windows:
        positives = np.bincount(
            w.fraud_bins[w.fraud_sources != NEVER], minlength=w.rows_per_bin.size
        )
        windows.append(ScoreHistogram(positives, w.rows_per_bin - positives, 0 * positives))
    return stream.edges, windows


def test_independent_rows_give_a_dispersion_about_one() -> None:
    """Twelve references of independent rows. The tilt's estimate rests on 14 numbers, each
    carried half by the frauds at pi = 0.005 (the rest of the tilt's variance is the legitimate
    rows'), so it spreads: over 40 such references its quartiles were 1.0 / 1.08 / 1.52 and its
    largest 3.7 (hence F(1, 14) for its p-values), the bins' 1.0 / 1.0 / 1.65 and 2.65; each
    was exactly 1 in about half of them."""
    rng = np.random.default_rng(30)
    estimates = [reference_dispersion(w, e) for e, w in (_independent(rng) for _ in range(12))]
    assert all(d.windows == WINDOWS for d in estimates)
    for values in ([d.bins for d in estimates], [d.tilt for d in estimates]):
        assert np.median(values) < 1.6
        assert 0.2 <= np.mean(np.array(values) == 1.0) <= 0.8
        assert max(values) < 4.0


@pytest.mark.parametrize(("burst", "correlation"), [(4.0, 0.95), (8.0, 0.95)])
def test_bursts_give_the_tilt_kishs_design_effect(burst: float, correlation: float) -> None:
    """An entity's frauds (1 + Poisson(m - 1) of them) share their score's mean: the frauds'
    mean score varies ``1 + correlation E[K (K - 1)] / E[K] = 1 + correlation (m^2 - 1) / m``
    times as much as independent frauds' (Kish 1965's design effect of clusters): 4.6 for
    bursts of 4, 8.5 for bursts of 8, at a correlation of 0.95."""
    effect = 1.0 + correlation * (burst**2 - 1.0) / burst
    tilts = [
        reference_dispersion(w, e).tilt
        for e, w in (_bursty(s, burst, correlation) for s in range(6))
    ]
    assert np.median(tilts) == pytest.approx(effect, rel=0.3)


def test_the_tests_divide_the_dispersion_out() -> None:
    rng = np.random.default_rng(31)
    edges, windows = _independent(rng)
    reference = ScoreHistogram.pooled(windows).classes(edges)
    counts = _independent(rng, 0.02)[1][0].rows
    for pi in (0.005, 0.02):
        plain = goodness_of_fit(counts, reference, pi, reference_rows=WINDOWS * ROWS)
        assert (plain.dispersion, plain.tilt_dispersion) == (1.0, 1.0)
        assert plain == goodness_of_fit(
            counts, reference, pi, reference_rows=WINDOWS * ROWS, dispersion=NO_DISPERSION
        )
        bursty = Dispersion(bins=3.0, tilt=4.0, windows=WINDOWS)
        fit = goodness_of_fit(
            counts, reference, pi, reference_rows=WINDOWS * ROWS, dispersion=bursty
        )
        assert (fit.g, fit.tilt, fit.dof) == (plain.g, plain.tilt, plain.dof)
        # Each divisor is between 1 and the frauds' own dispersion: legitimate rows stay as
        # they were, and the tilt's variance is mostly the frauds'.
        assert 1.0 < fit.dispersion < 3.0
        assert 2.0 < fit.tilt_dispersion < 4.0
        assert fit.p_value == pytest.approx(
            chi2_sf(fit.g / (fit.inflation * fit.dispersion), fit.dof)
        )
        deflated = fit.tilt / (fit.tilt_inflation * fit.tilt_dispersion)
        assert fit.tilt_p_value == pytest.approx(f_sf(deflated, 1, WINDOWS))
        assert fit.p_value >= plain.p_value
        assert fit.tilt_p_value >= plain.tilt_p_value
    low = goodness_of_fit(
        counts, reference, 0.002, reference_rows=WINDOWS * ROWS, dispersion=bursty
    )
    high = goodness_of_fit(
        counts, reference, 0.02, reference_rows=WINDOWS * ROWS, dispersion=bursty
    )
    # At a higher fraud rate more of each test's variance is the frauds'.
    assert high.tilt_dispersion > low.tilt_dispersion


def test_the_g_test_averages_its_p_value_over_what_the_reference_allows() -> None:
    """The bins dispersion rests on the frauds' small share of each window's degrees of
    freedom: from 14 windows of bursts of 8 scoring alike it read 1.5 to 5.6 across streams
    (bench/nowcast.py), and a reference that read about 1 by chance warned on healthy windows.
    Its bootstrap over the reference's windows spreads it, and a window's G-test p-value is the
    mean of the p-values at the spread's points."""
    edges, windows = _bursty(3, 8.0, 0.95)
    dispersion = reference_dispersion(windows, edges)
    spread = dispersion.bins_spread
    assert len(spread) == SPREAD_POINTS
    assert list(spread) == sorted(spread)
    assert spread[0] <= dispersion.bins <= spread[-1]
    assert spread[-1] > 1.5 * spread[0]  # 14 windows of bursts pin it down loosely
    reference = ScoreHistogram.pooled(windows).classes(edges)
    later = _bursty(4, 8.0, 0.95)[1]
    counts = later[0].rows + later[1].rows
    rows = sum(int(w.rows.sum()) for w in windows)

    def fit(d: Dispersion) -> Fit:
        return goodness_of_fit(counts, reference, 0.005, reference_rows=rows, dispersion=d)

    # Each point's p-value from the fit's own divisors (the statistic over its inflation and
    # its deviance-weighted dispersion), then their mean.
    points = [fit(replace(dispersion, bins=b, bins_spread=())) for b in spread]
    at_points = [chi2_sf(f.g / (f.inflation * f.dispersion), f.dof) for f in points]
    assert fit(dispersion).p_value == pytest.approx(np.mean(at_points), rel=1e-9)


def test_few_windows_assume_independent_rows() -> None:
    edges, windows = _bursty(3, 8.0, 0.95)
    assert reference_dispersion(windows[:2], edges) == NO_DISPERSION
    few = reference_dispersion(windows[: MIN_TILT_WINDOWS - 1], edges)
    assert few.tilt == 1.0
    assert few.bins > 1.0
    assert few.windows == MIN_TILT_WINDOWS - 1


def test_a_dispersion_is_at_least_one() -> None:
    with pytest.raises(InvalidInputError):
        Dispersion(bins=0.9)
    assert Dispersion(2.0, 3.0, 14).to_dict() == {"bins": 2.0, "tilt": 3.0, "windows": 14}


def test_a_window_holding_all_the_references_frauds_is_left_out() -> None:
    # Only one window had frauds: left out, the rest is no reference to test it against (found
    # by the catalogue API's test, whose reference is one such window among unlabelled ones).
    edges = np.linspace(-2.0, 3.0, 11)
    empty = np.zeros(12, dtype=np.int64)
    frauds = ScoreHistogram(np.full(12, 3, dtype=np.int64), np.full(12, 50, dtype=np.int64), empty)
    quiet = [ScoreHistogram(empty, np.full(12, 50, dtype=np.int64), empty) for _ in range(4)]
    measured = reference_dispersion([frauds, *quiet], edges)
    assert measured.windows == len(quiet)  # the windows without frauds are tested, it is not
    assert (measured.bins, measured.tilt) == (1.0, 1.0)
