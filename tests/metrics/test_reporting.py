"""Labels still arriving (app/metrics/reporting.py): arrivals, chain-ladder completeness, the
early estimates and the early drop test's likelihood ratio."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import ndtr

from app.metrics import InvalidInputError
from app.metrics.development import Completeness, develop
from app.metrics.early_estimate import (
    EstimateSettings,
    LabelsSoFar,
    _within_room,
    estimate_window,
)
from app.metrics.reporting import UNKNOWN_LOOK, Arrivals, Cells
from app.metrics.tilt import (
    TiltTest,
    binned_average_precision,
    binormal_axis,
    dispersion,
    tilt_for_drop,
    tilted,
)
from app.monitoring.early import ReferenceBins

EDGES = np.linspace(-3.0, 4.0, 36)
BINS = EDGES.size + 1
THRESHOLD_BIN = int(np.searchsorted(EDGES, 2.0, side="right"))


def _normal_shares(mu: float) -> np.ndarray:
    cdf = ndtr(np.concatenate([[-np.inf], EDGES, [np.inf]]) - mu)
    return np.diff(cdf)


LEGIT = _normal_shares(0.0)
FRAUD = _normal_shares(2.5)


def _cells() -> Cells:
    flagged = np.arange(BINS) >= THRESHOLD_BIN
    return Cells(of_bin=flagged.astype(np.int64), flagged=flagged, reference_shares=FRAUD)


def test_arrivals_count_by_look_and_survive_bytes() -> None:
    arrivals = Arrivals.of(
        frauds=([3, 3, 3, 30, 30], [1, 1, 4, UNKNOWN_LOOK, 9], [1, 1, 2, 0, 2]),
        cleared=([1, 1, 0], [1, 2, 2], [1, 1, 3]),
    )
    assert arrivals.frauds == 5
    assert arrivals.unknown_times == 1
    assert arrivals.frauds_per_bin(BINS, 1)[3] == 2
    assert arrivals.frauds_per_bin(BINS, 1)[30] == 1  # unknown time: arrived, it is there
    assert arrivals.frauds_per_bin(BINS)[3] == 3
    assert arrivals.cleared(flagged=True, source=1, by_look=1) == 1
    assert arrivals.cleared(flagged=True, source=None, by_look=None) == 2
    flagged = np.arange(BINS) >= 20
    assert arrivals.frauds_where(flagged, source=2, by_look=None) == 1
    cumulative = arrivals.cumulative(np.zeros(BINS, dtype=np.int64), 1, 5)
    # Unknown times and arrivals after the horizon (look 9 > 5) are left out of the development.
    assert cumulative.tolist() == [[0, 2, 2, 2, 3, 3]]
    again = Arrivals.from_bytes(arrivals.to_bytes())
    assert again.to_bytes() == arrivals.to_bytes()
    with pytest.raises(InvalidInputError):
        Arrivals.from_bytes(arrivals.to_bytes()[:-1])


@pytest.mark.parametrize("seed", range(6))
def test_arrivals_counted_in_a_table_equal_those_counted_by_sorting(seed: int) -> None:
    """Keys spanning few combinations are counted in a table (a window's cleared rows), many
    by sorting (frauds by bin, look and source): both give the same rows, order and counts."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    flagged = rng.random(n) < 0.1
    looks = rng.integers(-1, 12, n)  # UNKNOWN_LOOK among them
    sources = rng.integers(0, 5, n).astype(np.int8)
    bins = rng.integers(0, 40, n)
    spread = rng.integers(-(10**9), 10**9, n)  # too many combinations for a table
    for cleared in ((flagged, looks, sources), (bins, looks, sources), (spread, looks, sources)):
        by_table = Arrivals.of(frauds=cleared, cleared=cleared)
        by_sorting = _aggregated_by_sorting(*cleared)
        assert [c.tolist() for c in by_sorting] == [
            by_table.fraud_bins.tolist(),
            by_table.fraud_looks.tolist(),
            by_table.fraud_sources.tolist(),
            by_table.fraud_counts.tolist(),
        ]
        assert by_table.cleared_counts.tolist() == by_sorting[3].tolist()
        assert by_table.fraud_bins.dtype == by_table.fraud_counts.dtype == np.int64


def _aggregated_by_sorting(*keys: np.ndarray) -> list[np.ndarray]:
    rows, counts = np.unique(
        np.column_stack([k.astype(np.int64) for k in keys]), axis=0, return_counts=True
    )
    return [*rows.T, counts]


def test_the_chain_ladder_recovers_a_known_reporting_curve() -> None:
    # Every window: 40 frauds, a quarter labelled at look 1, half by look 2, all by look 3.
    curve = np.array([0, 10, 20, 40])
    windows = 20
    cumulative = np.tile(curve, (windows, 1, 1))
    ages = np.arange(windows, 0, -1)  # the newest window is 1 look old
    development = develop(cumulative, ages, recent=5, replicates=50, seed=1)
    assert development.completeness[0].tolist() == [0.0, 0.25, 0.5, 1.0]
    # Identical windows: every bootstrap replicate agrees.
    np.testing.assert_allclose(development.replicates[:, 0, 1], 0.25)
    assert development.at(7).look == 7  # past the horizon: F is 1
    assert development.at(7).value.tolist() == [1.0]


def test_the_chain_ladder_follows_recent_reporting() -> None:
    # Old windows labelled slowly (10% by look 1), the 10 newest fast (60% by look 1).
    slow, fast = np.array([0, 10, 100]), np.array([0, 60, 100])
    cumulative = np.stack([slow] * 30 + [fast] * 10)[:, None, :]
    ages = np.arange(40, 0, -1) + 2
    development = develop(cumulative, ages, recent=10, replicates=20, seed=0)
    assert development.completeness[0, 1] == pytest.approx(0.6)


def _claims(rng: np.random.Generator, claim_sizes: np.ndarray, windows: int) -> np.ndarray:
    """Windows' cumulative arrivals over two cells and looks 0..10: each window has Poisson(30)
    claims, a claim's frauds (``claim_sizes`` drawn from) split between the cells at random
    and labelled together at one look, 1 + Poisson(3) (capped at 10)."""
    out = np.zeros((windows, 2, 11))
    for j in range(windows):
        for _ in range(rng.poisson(30)):
            size = int(rng.choice(claim_sizes))
            look = min(1 + int(rng.poisson(3)), 10)
            upper = rng.binomial(size, 0.5)
            out[j, :, look] += (size - upper, upper)
    return np.cumsum(out, axis=2)


@pytest.mark.parametrize(
    ("claim_sizes", "expected"),
    [
        (np.array([1]), 1.0),  # one fraud a claim: Poisson arrivals
        # A card's frauds disputed in one claim: 1, 3 or 5 frauds, E[m^2] / E[m] = 35/9.
        (np.array([1, 3, 5]), 35 / 9),
    ],
)
def test_labels_arriving_in_claims_show_as_the_claims_size(
    claim_sizes: np.ndarray, expected: float
) -> None:
    # England and Verrall's scale of the over-dispersed Poisson chain ladder: compound Poisson
    # arrivals vary E[m^2] / E[m] times as much as Poisson ones, and a claim spanning both cells
    # is one burst, not two.
    rng = np.random.default_rng(11)
    cumulative = _claims(rng, claim_sizes, windows=200)
    development = develop(cumulative, np.full(200, 10), recent=200, replicates=5, seed=0)
    assert development.dispersion == pytest.approx(expected, rel=0.12)
    young = develop(cumulative, np.full(200, 5), recent=200, replicates=5, seed=0)
    assert young.dispersion == 1.0  # no window has completed its reporting: nothing to read


def _by_look_one(rng: np.random.Generator, shares: np.ndarray) -> np.ndarray:
    # 400 frauds a window, ``shares`` of them labelled by look 1, all by look 2.
    return np.stack([[0, rng.binomial(400, share), 400] for share in shares])[:, None, :]


def test_reporting_that_keeps_speeding_up_is_carried_on_to_the_newest_windows() -> None:
    # Labelled by look 1: a share falling by 1.2% a window with age, 60% in the newest window
    # (3 looks old), about 61.5% in a window one look old. The chain ladder over the 28 newest
    # windows reads about 51%; the 28 before them read less, far beyond chance, so the trend
    # carries F on to the window estimated (log-linear, as the share falls here).
    rng = np.random.default_rng(3)
    ages = np.arange(70, 0, -1) + 2
    shares = 0.6 * np.exp(-0.012 * (ages - 3))
    speeding = develop(_by_look_one(rng, shares), ages, recent=28, replicates=200, seed=0)
    steady = develop(_by_look_one(rng, np.full(70, 0.4)), ages, recent=28, replicates=200, seed=0)
    assert speeding.completeness[0, 1] == pytest.approx(0.51, abs=0.02)
    read = speeding.at(1)
    assert read.trend is not None
    f_true = np.array([0.6 * np.exp(0.012 * 2), 0.95])
    # (within about two of its bootstrap standard deviations, 0.017 in log F)
    assert read.value[0] * np.exp(read.trend[0, 0]) == pytest.approx(f_true[0], abs=0.03)
    assert (steady.trend == 0.0).all()  # steady reporting: nothing carried on from noise
    # A window of 1,000 frauds reported at the newest speed, read with the chain ladder's 51%:
    # without the trend its intervals held the truth in 11 of 40 windows, with it in 37.
    f_read = np.array([read.value[0], 0.95])
    reps = np.column_stack([read.replicates[:, 0], np.full(200, 0.95)])
    trend = np.column_stack([read.trend[:, 0], np.zeros(201)])
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    covered: dict[bool, list[bool]] = {False: [], True: []}
    for seed in range(40):
        bins, labels = _thinned(rng, 2.5, 1000, f_true)
        for carried in (False, True):
            completeness = Completeness(1, f_read, reps, trend if carried else None)
            estimate = estimate_window(labels, _cells(), completeness, settings, seed=seed)
            low, high = estimate.intervals["frauds_total"] or (np.nan, np.nan)
            covered[carried].append(low <= bins.sum() <= high)
    assert np.mean(covered[False]) < 0.5
    assert np.mean(covered[True]) >= 0.9


def test_development_is_unknown_where_no_window_is_old_enough() -> None:
    cumulative = np.array([[[0, 5, 10, 10]]])
    development = develop(cumulative, [1], recent=5, replicates=10, seed=0)
    assert np.isnan(development.completeness[0, 0])
    assert np.isnan(development.completeness[0, 1])  # needs a window 2 looks old: none


def _thinned(
    rng: np.random.Generator, mu: float, frauds: int, f_cells: np.ndarray
) -> tuple[np.ndarray, LabelsSoFar]:
    cells = _cells()
    legit = rng.multinomial(20_000, LEGIT)
    bins = rng.multinomial(frauds, _normal_shares(mu))
    observed = rng.binomial(bins, f_cells[cells.of_bin])
    return bins, LabelsSoFar.of(observed, legit + bins)


def test_complete_labels_are_their_own_estimate() -> None:
    rng = np.random.default_rng(0)
    development = develop(np.ones((3, 2, 2)), [5, 5, 5], recent=3, replicates=20, seed=0)
    bins, labels = _thinned(rng, 2.5, 100, np.ones(2))
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    estimate = estimate_window(labels, _cells(), development.at(1), settings, seed=1)
    assert estimate.values["frauds_total"] == bins.sum()
    assert estimate.intervals["frauds_total"] == (bins.sum(), bins.sum())
    assert estimate.values["recall"] == pytest.approx(bins[THRESHOLD_BIN:].sum() / bins.sum())


def test_early_estimates_cover_what_the_complete_labels_show() -> None:
    # Flagged frauds 90% labelled (feedback), the others 15% (early chargebacks); the truth is
    # the window's eventual frauds. The 95% intervals cover it about 95% of the time.
    rng = np.random.default_rng(2)
    f_cells = np.array([0.15, 0.9])
    replicates = np.tile(f_cells, (100, 1))
    completeness = Completeness(3, f_cells, replicates)
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    covered, errors = [], []
    for seed in range(120):
        bins, labels = _thinned(rng, 2.5, 100, f_cells)
        estimate = estimate_window(labels, _cells(), completeness, settings, seed=seed)
        low, high = estimate.intervals["frauds_total"] or (np.nan, np.nan)
        covered.append(low <= bins.sum() <= high)
        errors.append(abs(estimate.values["frauds_total"] - bins.sum()) / bins.sum())
    assert 0.88 <= np.mean(covered) <= 1.0
    assert np.mean(errors) < 0.15


def _in_claims(
    rng: np.random.Generator, claims: float, size: int, f: float
) -> tuple[np.ndarray, LabelsSoFar]:
    """A window of Poisson(``claims``) claims of ``size`` frauds each, a claim labelled whole
    (with probability ``f``) or not at all."""
    legit = rng.multinomial(20_000, LEGIT)
    bins = np.zeros(BINS, dtype=np.int64)
    observed = np.zeros(BINS, dtype=np.int64)
    for _ in range(rng.poisson(claims)):
        frauds = rng.multinomial(size, FRAUD)
        bins += frauds
        if rng.random() < f:
            observed += frauds
    return bins, LabelsSoFar.of(observed, legit + bins)


def test_frauds_hidden_in_claims_are_drawn_in_claims() -> None:
    # A card's frauds disputed in one claim arrive together and stay hidden together: ten claims
    # of four frauds a window, 40% of them labelled so far. Drawn as single frauds, the hidden
    # count's interval covered 65% of these windows; drawn in bursts of the arrivals' dispersion
    # (4, what app.metrics.development.reporting_dispersion reads off such arrivals), 90%.
    f_cells = np.array([0.4, 0.4])
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    coverage = {}
    for arrivals_dispersion in (1.0, 4.0):
        rng = np.random.default_rng(5)
        completeness = Completeness(
            3, f_cells, np.tile(f_cells, (100, 1)), dispersion=arrivals_dispersion
        )
        covered = []
        for seed in range(200):
            bins, labels = _in_claims(rng, 10, 4, 0.4)
            if labels.frauds.sum() == 0:
                continue
            estimate = estimate_window(labels, _cells(), completeness, settings, seed=seed)
            low, high = estimate.intervals["frauds_total"] or (np.nan, np.nan)
            covered.append(low <= bins.sum() <= high)
        coverage[arrivals_dispersion] = np.mean(covered)
    assert coverage[1.0] < 0.75
    assert coverage[4.0] >= 0.87


def _reviewed_claims(rng: np.random.Generator, claims: float) -> tuple[np.ndarray, LabelsSoFar]:
    """A window of Poisson(``claims``) claims of four frauds each, 40% of the claims in (the
    card's frauds labelled whole), and investigators' feedback on 90% of the flagged frauds of
    the others, one row at a time."""
    legit = rng.multinomial(20_000, LEGIT)
    flagged = np.arange(BINS) >= THRESHOLD_BIN
    bins = np.zeros(BINS, dtype=np.int64)
    observed = np.zeros(BINS, dtype=np.int64)
    for _ in range(rng.poisson(claims)):
        frauds = rng.multinomial(4, FRAUD)
        bins += frauds
        observed += (
            frauds if rng.random() < 0.4 else np.where(flagged, rng.binomial(frauds, 0.9), 0)
        )
    return bins, LabelsSoFar.of(observed, legit + bins)


def test_reviewed_frauds_hide_one_by_one_where_claims_hide_in_bursts() -> None:
    # The flagged frauds nobody reviewed are a thinned sample of the claims (a tenth of each),
    # so a flagged cell's hidden count varies as single frauds do, as its own arrivals show;
    # the missed cells' hide in the claims. Drawn in the claims' bursts on both sides,
    # precision's interval held the truth in every window (too wide); with each flagged cell's
    # own dispersion, in 90-99% of them, and the hidden count's interval still covers.
    rng = np.random.default_rng(4)
    arrivals = np.zeros((200, 2, 11))
    for j in range(200):
        for _ in range(rng.poisson(30)):
            missed, flagged = rng.multinomial(4, [0.3, 0.7])
            reviewed = rng.binomial(flagged, 0.9)
            look = min(1 + int(rng.poisson(3)), 10)
            arrivals[j, :, look] += (missed, flagged - reviewed)
            arrivals[j, 1, 1] += reviewed
    development = develop(
        np.cumsum(arrivals, axis=2), np.full(200, 10), recent=200, replicates=5, seed=0
    )
    assert development.dispersion > 1.8  # the claims (2.0; the reviews arrive one by one)
    assert development.cell_dispersion is not None
    assert development.cell_dispersion[1] < 1.3  # the flagged cell's own: nearly one by one
    f_cells = np.array([0.4, 0.4 + 0.6 * 0.9])
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    flagged_rows = np.arange(BINS) >= THRESHOLD_BIN
    coverage: dict[str, dict[str, float]] = {}
    for name, own in (("claims on both", None), ("flagged its own", np.array([4.0, 1.0]))):
        rng = np.random.default_rng(8)
        completeness = Completeness(
            3, f_cells, np.tile(f_cells, (100, 1)), dispersion=4.0, cell_dispersion=own
        )
        covered: dict[str, list[bool]] = {"precision": [], "frauds_total": []}
        for seed in range(200):
            bins, labels = _reviewed_claims(rng, 25)
            estimate = estimate_window(labels, _cells(), completeness, settings, seed=seed)
            truth = {
                "precision": bins[flagged_rows].sum() / labels.rows[flagged_rows].sum(),
                "frauds_total": bins.sum(),
            }
            for metric, value in truth.items():
                low, high = estimate.intervals[metric] or (np.nan, np.nan)
                covered[metric].append(low <= value <= high)
        coverage[name] = {metric: float(np.mean(hits)) for metric, hits in covered.items()}
    assert coverage["claims on both"]["precision"] > 0.99
    assert 0.9 <= coverage["flagged its own"]["precision"] <= 0.99
    assert coverage["flagged its own"]["frauds_total"] >= 0.9


def test_small_windows_intervals_cover_their_hidden_frauds() -> None:
    # A week in: 90% of the flagged frauds labelled, 30% of the missed. A window of a few
    # frauds often has no chargeback yet in its missed cell; a prior that piled its mass on
    # "none hidden" (a Gamma of shape 0.05 x the cell's expected frauds) then gave an interval
    # of exactly the labels so far: 91% of these windows covered (97% now), and 47%
    # of the AP intervals of the 25-fraud bench's smallest windows (bench/early_pages.py).
    rng = np.random.default_rng(4)
    f_cells = np.array([0.3, 0.9])
    completeness = Completeness(7, f_cells, np.tile(f_cells, (100, 1)))
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    covered = []
    for seed in range(300):
        bins, labels = _thinned(rng, 2.5, int(rng.poisson(6.0)), f_cells)
        if labels.frauds.sum() == 0:
            continue
        estimate = estimate_window(labels, _cells(), completeness, settings, seed=seed)
        low, high = estimate.intervals["frauds_total"] or (np.nan, np.nan)
        covered.append(low <= bins.sum() <= high)
    assert len(covered) > 250
    assert 0.94 <= np.mean(covered) <= 0.99


def test_hidden_frauds_that_overflow_a_bin_move_to_their_cells_other_bins() -> None:
    # Two cells of three bins; the first cell's top bin has one unlabelled row left and is
    # drawn three hidden frauds: two move to the cell's bins with room, by shape, none to the
    # other cell, whose only bin with room lies outside its shape: it keeps what fits.
    of_bin = np.array([0, 0, 0, 1, 1, 1])
    shapes = np.array([[0.2, 0.2, 0.6, 0.5, 0.5, 0.0], [0.2, 0.2, 0.6, 0.5, 0.5, 0.0]])
    hidden = np.array([[0.0, 1.0, 3.0, 1.0, 0.0, 0.0], [1.0, 0.0, 3.0, 2.0, 2.0, 0.0]])
    room = np.array([[10.0, 10.0, 1.0, 1.0, 0.0, 5.0]])
    placed = _within_room(hidden, shapes, room, of_bin)
    assert (placed <= room).all()
    assert placed[0].tolist() == pytest.approx([1.0, 2.0, 1.0, 1.0, 0.0, 0.0])
    assert placed[1].tolist() == pytest.approx([2.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    # The first cell keeps all four of its hidden frauds in both replicates.
    assert placed[:, :3].sum(axis=1).tolist() == pytest.approx([4.0, 4.0])
    single = _within_room(hidden[0], shapes[0], room[0], of_bin)
    assert single.tolist() == pytest.approx(placed[0].tolist())


def test_no_label_yet_is_no_estimate_not_an_estimate_of_no_fraud() -> None:
    f_cells = np.array([0.05, 0.5])
    completeness = Completeness(0, f_cells, np.tile(f_cells, (10, 1)))
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    labels = LabelsSoFar.of(np.zeros(BINS), np.full(BINS, 300.0))
    estimate = estimate_window(labels, _cells(), completeness, settings, seed=1)
    assert estimate.values["pi"] is None
    assert estimate.intervals["pi"] is None
    assert "no fraud label" in estimate.undefined["pi"]


def test_a_label_earlier_than_any_replicate_expects_is_estimated() -> None:
    # At look 0 a window may hold a chargeback that came the same night, while half the bootstrap
    # replicates of the completeness saw none that early (F = 0 in every cell): under them the
    # label could not have arrived, and scaling it up made every unlabelled row a fraud.
    f_cells = np.array([0.05, 0.0])
    replicates = np.tile(f_cells, (100, 1))
    replicates[::2] = 0.0
    completeness = Completeness(0, f_cells, replicates)
    rows = np.full(BINS, 300.0)
    frauds = np.zeros(BINS)
    frauds[5] = 1.0
    settings = EstimateSettings(pi0=0.005, ap_shift=0.0, vague_odds=0.1, shape_strength=20.0)
    labels = LabelsSoFar.of(frauds, rows)
    estimate = estimate_window(labels, _cells(), completeness, settings, seed=3)
    low, high = estimate.intervals["frauds_total"] or (np.nan, np.nan)
    assert 1.0 <= low <= high <= rows.sum()
    # Only the replicates under which the label was possible make the interval (all at F =
    # 0.05 below the threshold): about 20 frauds for the one seen, not "every row a fraud".
    assert high < rows.sum() / 20


def test_binormal_axis_of_normal_legitimate_scores_is_the_score() -> None:
    axis = binormal_axis(LEGIT * 1e7)
    middles = (EDGES[:-1] + EDGES[1:]) / 2
    inner = slice(5, 30)
    np.testing.assert_allclose(axis[1:-1][inner], middles[inner], atol=0.05)


def test_the_drop_tilt_lowers_binned_average_precision_by_the_drop() -> None:
    axis = binormal_axis(LEGIT * 1e7)
    theta = tilt_for_drop(FRAUD, LEGIT, axis, pi0=0.005, drop=0.3)
    assert theta < 0
    before = binned_average_precision(FRAUD, LEGIT, 0.005)[0]
    after = binned_average_precision(tilted(FRAUD, axis, theta)[0], LEGIT, 0.005)[0]
    assert after == pytest.approx(0.7 * before, rel=1e-6)


@pytest.mark.parametrize("frauds", [10, 100])
def test_the_early_likelihood_ratio_has_expectation_one_without_a_drop(frauds: int) -> None:
    # What makes a CUSUM of it keep its false-alarm bound: E[exp(LLR)] = 1 under "no drop",
    # whatever the window's size and how thinned its labels are; and it drifts up under a drop.
    rng = np.random.default_rng(5)
    axis = binormal_axis(LEGIT * 1e7)
    drop = tilt_for_drop(FRAUD, LEGIT, axis, pi0=0.005, drop=0.3)
    test = TiltTest(FRAUD, axis, null_tilt=0.0, drop_tilt=drop)
    f_bins = np.where(np.arange(BINS) >= THRESHOLD_BIN, 0.9, 0.2)
    reach = FRAUD * f_bins
    healthy, degraded = [], []
    for _ in range(4000):
        observed = rng.multinomial(frauds, reach / reach.sum())
        healthy.append(test.evidence(observed, f_bins).log_likelihood_ratio)
    worse = tilted(FRAUD, axis, drop)[0] * f_bins
    for _ in range(500):
        observed = rng.multinomial(frauds, worse / worse.sum())
        degraded.append(test.evidence(observed, f_bins).log_likelihood_ratio)
    assert np.mean(np.exp(healthy)) == pytest.approx(1.0, abs=0.1)
    assert np.mean(healthy) < 0 < np.mean(degraded)


def test_dispersion_is_about_one_for_independent_frauds_and_larger_for_bursts() -> None:
    rng = np.random.default_rng(3)
    axis = binormal_axis(LEGIT * 1e7)
    independent = np.stack([rng.multinomial(100, FRAUD) for _ in range(200)])
    assert dispersion(independent, FRAUD, axis) == pytest.approx(1.0, abs=0.25)
    # Bursts: 20 entities of 5 frauds each, one bin per entity.
    bursts = np.stack([5 * rng.multinomial(20, FRAUD) for _ in range(200)])
    assert dispersion(bursts, FRAUD, axis) > 3.0


def test_dispersion_is_blind_to_a_drop_that_has_not_paged_yet() -> None:
    # Half the windows after a drop (the frauds' scores fall): independent frauds still, at a
    # lower level. Read as variance about the reference's level it was about 3.
    rng = np.random.default_rng(4)
    axis = binormal_axis(LEGIT * 1e7)
    healthy = [rng.multinomial(100, FRAUD) for _ in range(100)]
    worse = tilted(FRAUD, axis, 0.4)[0]
    broken = [rng.multinomial(100, worse / worse.sum()) for _ in range(100)]
    assert dispersion(np.stack(healthy + broken), FRAUD, axis) == pytest.approx(1.0, abs=0.3)


def test_dispersion_of_a_young_model_is_not_blown_up_by_one_broken_window() -> None:
    # 23 healthy windows of 1,000 frauds, then one after a drop: its one squared difference
    # made the unclipped moving range read 3.7.
    rng = np.random.default_rng(5)
    axis = binormal_axis(LEGIT * 1e7)
    healthy = [rng.multinomial(1000, FRAUD) for _ in range(23)]
    worse = tilted(FRAUD, axis, 0.4)[0]
    windows = np.stack([*healthy, rng.multinomial(1000, worse / worse.sum())])
    assert dispersion(windows, FRAUD, axis) < 1.6


def _calm_reference(calm_level: float, calm_windows: int = 20) -> ReferenceBins:
    """A reference of 10 windows of 100 frauds pooled into FRAUD's shares, then
    ``calm_windows`` calm judged windows whose frauds sit ``calm_level`` (a tilt) from it."""
    rng = np.random.default_rng(6)
    axis = binormal_axis(LEGIT * 1e7)
    shifted = tilted(FRAUD, axis, calm_level)[0]
    windows = [rng.multinomial(100, FRAUD) for _ in range(10)]
    windows += [rng.multinomial(100, shifted / shifted.sum()) for _ in range(calm_windows)]
    return ReferenceBins(
        frauds=FRAUD * 1000.0,
        legit=LEGIT * 1e7,
        window_frauds=np.stack(windows).astype(np.float64),
        ap_shift=0.0,
        threshold_bin=THRESHOLD_BIN,
        calm_windows=calm_windows,
    )


def test_calm_windows_that_score_lower_than_the_reference_lower_no_drop() -> None:
    """A reference whose frauds (in bursts) happened to score high made every later window of
    a healthy bursty stream look worse; the calm judged windows say where "no drop" is."""
    axis = binormal_axis(LEGIT * 1e7)
    low = _calm_reference(-0.15).calm_tilt(FRAUD, axis, 1.0)
    level = _calm_reference(0.0).calm_tilt(FRAUD, axis, 1.0)
    assert low is not None
    assert level is not None
    # 2,000 calm frauds: a standard error of about 0.02 in tilt.
    assert low == pytest.approx(-0.15 - 0.02, abs=0.04)
    assert level == pytest.approx(-0.02, abs=0.04)
    # Bursts widen its standard error as they widen the reference's.
    wider = _calm_reference(0.0).calm_tilt(FRAUD, axis, 4.0)
    assert wider is not None
    assert wider < level
    none = replace(_calm_reference(0.0), calm_windows=0)
    assert none.calm_tilt(FRAUD, axis, 1.0) is None


def test_arrivals_merged_from_blocks_equal_those_counted_at_once() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    frauds = (rng.integers(0, 40, n), rng.integers(-1, 9, n), rng.integers(0, 4, n))
    cleared = (rng.random(n) < 0.1, rng.integers(-1, 9, n), rng.integers(0, 4, n))
    whole = Arrivals.of(frauds=frauds, cleared=cleared)
    cuts = [0, 1, 1, 1700, 4999, n]  # an empty block among them
    merged = Arrivals.merged(
        [
            Arrivals.of(
                frauds=tuple(c[a:b] for c in frauds),  # type: ignore[arg-type]
                cleared=tuple(c[a:b] for c in cleared),  # type: ignore[arg-type]
            )
            for a, b in itertools.pairwise(cuts)
        ]
    )
    assert merged.to_bytes() == whole.to_bytes()
