"""The mixture kernel: score bins, the maximum-likelihood fraud rate, and the misfit tests."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from scipy import optimize

from app.metrics import InvalidInputError
from app.metrics.misfit import chi2_sf, goodness_of_fit
from app.metrics.mixture import (
    BODY_LEVELS,
    MIN_ROWS_ABOVE,
    TAIL_STEP,
    ClassHistogram,
    ScoreHistogram,
    adjusted_count,
    bin_edges,
    edges_from_bytes,
    edges_to_bytes,
    fit_prior,
    histogram,
)
from app.metrics.types import BoolArray, Float64Array, Int64Array

THRESHOLD = 2.0
ROWS = 20_000
"""Rows of a window; a reference is 14 of them."""
REFERENCE_WINDOWS = 14


# --- fit_prior ---------------------------------------------------------------------------------


def _em(
    counts: Float64Array, f1: Float64Array, f0: Float64Array, steps: int = 20_000
) -> Float64Array:
    """Saerens, Latinne & Decaestecker (2002), eq. 2.9 with fixed likelihoods: the prior
    re-estimated as the rows' mean posterior, run until it stops moving."""
    n = np.atleast_2d(counts)
    p1 = np.broadcast_to(f1, n.shape)
    p0 = np.broadcast_to(f0, n.shape)
    n = np.where(p1 + p0 > 0, n, 0.0)
    pi = np.full(n.shape[0], 0.5)
    for _ in range(steps):
        mix = pi[:, None] * p1 + (1.0 - pi[:, None]) * p0
        posterior = np.divide(pi[:, None] * p1, mix, out=np.zeros_like(mix), where=mix > 0)
        new = (n * posterior).sum(axis=1) / n.sum(axis=1)
        if np.array_equal(new, pi):
            break
        pi = new
    return pi


def _random_densities(rng: np.random.Generator, rows: int, bins: int) -> Float64Array:
    """``rows`` random densities over ``bins``, about a fifth of each's bins empty."""
    weights = rng.gamma(1.0, size=(rows, bins)) * (rng.random((rows, bins)) > 0.2)
    weights[:, 0] += 1e-3  # no density is empty everywhere
    densities: Float64Array = weights / weights.sum(axis=1, keepdims=True)
    return densities


def _mixture_counts(
    rng: np.random.Generator, pis: Float64Array, f1: Float64Array, f0: Float64Array, total: int
) -> Float64Array:
    mix = pis[:, None] * f1 + (1.0 - pis[:, None]) * f0
    counts: Float64Array = np.stack([rng.multinomial(total, m / m.sum()) for m in mix])
    return counts.astype(np.float64)


def _log_likelihood(pi: float, counts: Float64Array, f1: Float64Array, f0: Float64Array) -> float:
    mix = pi * f1 + (1.0 - pi) * f0
    used = counts > 0
    return float((counts[used] * np.log(mix[used])).sum())


def test_fit_prior_is_the_fixed_point_of_em_for_shared_densities() -> None:
    rng = np.random.default_rng(1)
    f1, f0 = _random_densities(rng, 2, 40)
    pis = np.exp(rng.uniform(np.log(0.01), np.log(0.9), 60))
    counts = _mixture_counts(rng, pis, np.broadcast_to(f1, (60, 40)), f0, 10_000)
    fitted = fit_prior(counts, f1, f0)
    assert fitted.shape == (60,)
    assert ((fitted > 0) & (fitted < 1)).all()
    np.testing.assert_allclose(fitted, _em(counts, f1, f0), rtol=1e-9, atol=1e-12)


def test_fit_prior_is_the_fixed_point_of_em_row_by_row() -> None:
    """Each row its own densities (as the bootstrap's redrawn references), small pi included."""
    rng = np.random.default_rng(2)
    f1 = _random_densities(rng, 50, 30)
    f0 = _random_densities(rng, 50, 30)
    pis = np.exp(rng.uniform(np.log(0.002), np.log(0.5), 50))
    counts = _mixture_counts(rng, pis, f1, f0, 50_000)
    fitted = fit_prior(counts, f1, f0)
    assert ((fitted > 0) & (fitted < 1)).all()
    np.testing.assert_allclose(fitted, _em(counts, f1, f0), rtol=1e-9, atol=1e-12)
    # One row at a time, and a 1-d row, give the same values.
    np.testing.assert_allclose(fit_prior(counts[7], f1[7], f0[7]), fitted[7:8], rtol=1e-12)
    assert fit_prior(counts[7], f1[7], f0[7]).shape == (1,)


def test_fit_prior_maximises_the_likelihood_as_scipy_does() -> None:
    rng = np.random.default_rng(3)
    f1, f0 = _random_densities(rng, 2, 25)
    counts = _mixture_counts(rng, np.array([0.003, 0.03, 0.3, 0.7]), np.tile(f1, (4, 1)), f0, 5_000)
    for row, pi in zip(counts, fit_prior(counts, f1, f0), strict=True):

        def loss(p: float, row: Float64Array = row) -> float:
            return -_log_likelihood(p, row, f1, f0)

        found = optimize.minimize_scalar(
            loss, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12}
        )
        assert pi == pytest.approx(found.x, abs=1e-7)
        assert _log_likelihood(float(pi), row, f1, f0) >= -found.fun - 1e-9


def test_fit_prior_with_two_bins_matches_the_observed_share_or_its_boundary() -> None:
    """With two bins the mixture can match the share ``q`` in the first bin exactly:
    ``pi = (q - f0) / (f1 - f0)``, clipped to [0, 1], exactly 0 or 1 beyond the boundary."""
    f1, f0 = np.array([0.8, 0.2]), np.array([0.3, 0.7])
    first = np.arange(0, 1001, 25, dtype=np.float64)
    counts = np.stack([first, 1000.0 - first], axis=1)
    expected = np.clip((first / 1000.0 - 0.3) / 0.5, 0.0, 1.0)
    fitted = fit_prior(counts, f1, f0)
    np.testing.assert_allclose(fitted, expected, atol=1e-12)
    assert (fitted[expected == 0.0] == 0.0).all()
    assert (fitted[expected == 1.0] == 1.0).all()


def test_fit_prior_is_exactly_on_the_boundary_where_the_slope_says_so() -> None:
    f1 = np.array([0.0, 0.0, 0.5, 0.5])
    f0 = np.array([0.4, 0.4, 0.2, 0.0])
    counts = np.array(
        [
            [3.0, 9.0, 0.0, 0.0],  # only where no fraud scores: 0
            [0.0, 0.0, 0.0, 4.0],  # only where no legitimate scores: 1
            [0.0, 1.0, 0.0, 1.0],  # both kinds: inside
        ]
    )
    fitted = fit_prior(counts, f1, f0)
    assert fitted[0] == 0.0
    assert fitted[1] == 1.0
    assert 0.0 < fitted[2] < 1.0
    # The slope at 0, sum n (f1 - f0) / f0, exactly 0: the maximum is at 0.
    f1, f0 = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])
    assert fit_prior(np.array([1.0, 1.0, 2.0]), f1, f0)[0] == 0.0
    assert fit_prior(np.array([1.0, 1.0, 3.0]), f1, f0)[0] == 0.0
    assert 0.0 < fit_prior(np.array([2.0, 1.0, 2.0]), f1, f0)[0] < 1.0


def test_fit_prior_ignores_bins_neither_class_reaches() -> None:
    rng = np.random.default_rng(4)
    f1, f0 = _random_densities(rng, 2, 20)
    counts = _mixture_counts(rng, np.array([0.01, 0.2, 0.6]), np.tile(f1, (3, 1)), f0, 3_000)
    padded = np.concatenate([counts, np.full((3, 2), 500.0)], axis=1)
    zeros = np.zeros(2)
    np.testing.assert_allclose(
        fit_prior(padded, np.concatenate([f1, zeros]), np.concatenate([f0, zeros])),
        fit_prior(counts, f1, f0),
        rtol=1e-12,
    )


# --- chi2_sf -----------------------------------------------------------------------------------


def test_chi2_sf_at_its_ends() -> None:
    for dof in (1, 2, 7, 100):
        assert chi2_sf(0.0, dof) == 1.0
        assert chi2_sf(-1.0, dof) == 1.0
        assert chi2_sf(math.inf, dof) == 0.0
        assert chi2_sf(1e6, dof) == 0.0


# --- bins --------------------------------------------------------------------------------------


def test_a_score_on_an_edge_counts_in_the_bin_above() -> None:
    edges = np.array([-1.0, 0.0, THRESHOLD, 3.0])
    scores = np.array([-5.0, -1.0, -0.5, 0.0, 1.9, THRESHOLD, THRESHOLD, 2.5, 3.0, 9.0])
    np.testing.assert_array_equal(histogram(scores, edges), [1, 2, 2, 3, 2])


def test_histogram_counts_the_flagged_rows_exactly() -> None:
    """Scores at the threshold are flagged (``score >= threshold``) and so sit above its edge."""
    rng = np.random.default_rng(5)
    scores = np.round(rng.normal(THRESHOLD, 1.0, 5_000), 1)  # many exactly at the threshold
    assert (scores == THRESHOLD).sum() > 50
    edges = bin_edges(scores, THRESHOLD)
    counts = histogram(scores, edges)
    above = int(np.searchsorted(edges, THRESHOLD)) + 1
    assert counts.size == edges.size + 1
    assert counts.dtype == np.int64
    assert counts.sum() == scores.size
    assert counts[above:].sum() == (scores >= THRESHOLD).sum()


def test_bin_edges_are_increasing_and_hold_the_threshold() -> None:
    rng = np.random.default_rng(6)
    for scores, threshold in [
        (rng.standard_normal(ROWS), THRESHOLD),
        (rng.standard_normal(500), 10.0),  # above every score
        (rng.integers(0, 5, 3_000).astype(float), 3.0),  # heavily tied
        (np.array([0.0, 1.0]), 0.5),
    ]:
        edges = bin_edges(scores, threshold)
        assert threshold in edges
        assert (np.diff(edges) > 0).all()
        assert np.isfinite(edges).all()


def test_bin_edges_are_two_percent_bins_then_finer_up_the_top_tail() -> None:
    """Body bins hold 2% of the edges' window each; above the 98th percentile each edge leaves
    sqrt(1/2) as many scores above it as the one before, until about three remain."""
    scores = np.random.default_rng(7).standard_normal(ROWS)
    edges = bin_edges(scores, threshold=10.0)  # above every score: the last edge
    assert edges[-1] == 10.0
    counts = histogram(scores, edges)
    body = len(BODY_LEVELS)
    assert np.abs(counts[:body] - 0.02 * ROWS).max() <= 1
    tail_edges = edges[body:-1]
    tail = 0.02 * ROWS
    steps = 0
    while tail * TAIL_STEP >= MIN_ROWS_ABOVE:
        tail *= TAIL_STEP
        steps += 1
    assert tail_edges.size == steps == 14
    above = np.array([(scores >= e).sum() for e in tail_edges])
    assert np.abs(above - 0.02 * ROWS * TAIL_STEP ** np.arange(1, steps + 1)).max() <= 1
    assert MIN_ROWS_ABOVE <= above[-1] <= MIN_ROWS_ABOVE / TAIL_STEP + 1
    assert edges.size + 1 == 65  # the ~65 bins of the module docstring


@pytest.mark.parametrize(
    "scores", [[], [1.0], [0.0, math.nan], [0.0, math.inf, 1.0], [-math.inf, 0.0]]
)
def test_bin_edges_need_two_finite_scores(scores: list[float]) -> None:
    with pytest.raises(InvalidInputError, match="two finite scores"):
        bin_edges(scores, THRESHOLD)


# --- ScoreHistogram, ClassHistogram and their bytes -----------------------------------------------


def _score_counts(seed: int) -> tuple[Float64Array, ScoreHistogram]:
    rng = np.random.default_rng(seed)
    labels = rng.random(3_000) < 0.05
    scores = rng.standard_normal(3_000) + 2.5 * labels
    edges = bin_edges(scores, THRESHOLD)
    return edges, ScoreHistogram.of(edges, scores, labels, rng.standard_normal(700))


def test_score_counts_by_label() -> None:
    rng = np.random.default_rng(8)
    labels = rng.random(2_000) < 0.1
    scores = rng.standard_normal(2_000) + 2.5 * labels
    unlabelled = rng.standard_normal(500)
    edges = bin_edges(scores, THRESHOLD)
    counts = ScoreHistogram.of(edges, scores, labels.astype(int), unlabelled)
    np.testing.assert_array_equal(counts.positives, histogram(scores[labels], edges))
    np.testing.assert_array_equal(counts.negatives, histogram(scores[~labels], edges))
    np.testing.assert_array_equal(counts.unlabelled, histogram(unlabelled, edges))
    np.testing.assert_array_equal(
        counts.rows, histogram(np.concatenate([scores, unlabelled]), edges)
    )
    assert counts.rows.sum() == 2_500


def test_score_counts_round_trip_through_bytes() -> None:
    edges, counts = _score_counts(9)
    data = counts.to_bytes()
    assert len(data) == 10 + 3 * 8 * (edges.size + 1)
    back = ScoreHistogram.from_bytes(data)
    for name in ("positives", "negatives", "unlabelled"):
        np.testing.assert_array_equal(getattr(back, name), getattr(counts, name))
        assert getattr(back, name).dtype == np.int64
    assert back.positives.flags.writeable
    np.testing.assert_array_equal(edges_from_bytes(edges_to_bytes(edges)), edges)


def test_score_counts_refuse_foreign_or_damaged_bytes() -> None:
    _, counts = _score_counts(10)
    data = counts.to_bytes()
    version_2 = data[:4] + struct.pack("<H", 2) + data[6:]
    for bad in (data[:-1], data + b"\0", data[:9], b"", b"CMSK" + data[4:], version_2):
        with pytest.raises(InvalidInputError):
            ScoreHistogram.from_bytes(bad)
    with pytest.raises(InvalidInputError, match="whole float64"):
        edges_from_bytes(b"\0" * 7)


def test_pooled_score_counts_add() -> None:
    _, a = _score_counts(11)
    b = ScoreHistogram(a.positives * 2, a.negatives + 1, a.unlabelled * 0)
    pooled = ScoreHistogram.pooled([a, b, a])
    np.testing.assert_array_equal(pooled.positives, 4 * a.positives)
    np.testing.assert_array_equal(pooled.negatives, 3 * a.negatives + 1)
    np.testing.assert_array_equal(pooled.unlabelled, 2 * a.unlabelled)
    np.testing.assert_array_equal(pooled.rows, 2 * a.rows + b.rows)
    assert pooled.positives.dtype == np.int64
    with pytest.raises(InvalidInputError, match="nothing to pool"):
        ScoreHistogram.pooled([])


def test_score_counts_reject_mismatched_shapes() -> None:
    edges = np.array([0.0, 1.0])
    with pytest.raises(InvalidInputError, match="one length"):
        ScoreHistogram.of(edges, [0.5, 1.5], [1], [])
    three: Int64Array = np.zeros(3, dtype=np.int64)
    with pytest.raises(InvalidInputError, match="1-d"):
        ScoreHistogram(three, np.zeros(4, dtype=np.int64), three)
    with pytest.raises(InvalidInputError, match="1-d"):
        ScoreHistogram(three[None, :], three[None, :], three[None, :])


def test_class_counts_from_score_counts() -> None:
    edges, counts = _score_counts(12)
    classes = counts.classes(edges)
    np.testing.assert_array_equal(classes.positives, counts.positives)
    f1, f0 = classes.densities()
    assert f1.sum() == pytest.approx(1.0)
    assert f0.sum() == pytest.approx(1.0)
    # The tilt's axis is standardised by the fraud scores: mean 0, spread 1 under f1.
    z = classes.fraud_positions()
    assert z.size == edges.size + 1
    assert (f1 * z).sum() == pytest.approx(0.0, abs=1e-12)
    assert (f1 * z * z).sum() == pytest.approx(1.0)
    assert (np.diff(z) > 0).all()


def test_class_counts_need_both_classes_and_one_bin_per_gap() -> None:
    edges = np.array([0.0, 1.0])
    ones: Int64Array = np.ones(3, dtype=np.int64)
    with pytest.raises(InvalidInputError, match="frauds and legitimate"):
        ClassHistogram(edges, ones * 0, ones)
    with pytest.raises(InvalidInputError, match="frauds and legitimate"):
        ClassHistogram(edges, ones, ones * 0)
    with pytest.raises(InvalidInputError, match="one bin more"):
        ClassHistogram(edges, ones[:2], ones[:2])
    with pytest.raises(InvalidInputError, match="1-d"):
        ClassHistogram(edges, ones, ones[:2])


# --- adjusted_count ----------------------------------------------------------------------------


def test_adjusted_count_is_formans_formula_clipped() -> None:
    """Forman (2005): ``(q - FPR) / (TPR - FPR)``, clipped to [0, 1]; undefined if TPR = FPR."""
    rng = np.random.default_rng(13)
    q, tpr, fpr = rng.random((3, 500))
    got = adjusted_count(q, tpr, fpr)
    np.testing.assert_allclose(got, np.clip((q - fpr) / (tpr - fpr), 0.0, 1.0), rtol=1e-15)
    assert got.min() == 0.0
    assert got.max() == 1.0
    assert adjusted_count(np.array([0.3]), np.array([0.8]), np.array([0.1]))[0] == pytest.approx(
        2 / 7
    )
    same = adjusted_count(np.array([0.3, 0.0]), np.array([0.4, 0.0]), np.array([0.4, 0.0]))
    assert np.isnan(same).all()


# --- goodness_of_fit ---------------------------------------------------------------------------


def _draw(
    rng: np.random.Generator, pis: Float64Array, *, legit_shift: float = 0.0
) -> tuple[Float64Array, BoolArray]:
    """Windows of ``ROWS`` rows: legitimate scores N(legit_shift, 1), fraud scores N(2.5, 1)."""
    labels = rng.random((pis.size, ROWS)) < pis[:, None]
    scores = rng.standard_normal((pis.size, ROWS)) + np.where(labels, 2.5, legit_shift)
    return scores, labels


def _reference(rng: np.random.Generator, pi: float) -> ClassHistogram:
    """Fourteen windows' labelled scores, on bins cut from the first of them."""
    scores, labels = _draw(rng, np.full(REFERENCE_WINDOWS, pi))
    edges = bin_edges(scores[0], THRESHOLD)
    return ScoreHistogram.of(edges, scores.ravel(), labels.ravel(), []).classes(edges)


def _binned(scores: Float64Array, edges: Float64Array) -> Int64Array:
    """Each row of ``scores`` as bin counts, in one pass."""
    windows, bins = scores.shape[0], edges.size + 1
    index = np.searchsorted(edges, scores, side="right") + bins * np.arange(windows)[:, None]
    counts: Int64Array = np.bincount(index.ravel(), minlength=windows * bins)
    return counts.reshape(windows, bins)


def _fits(
    reference: ClassHistogram,
    pis: Float64Array,
    rng: np.random.Generator,
    *,
    legit_shift: float = 0.0,
) -> list[tuple[float, float, float]]:
    """(p-value, tilt p-value, G / (inflation dof)) of windows drawn at ``pis``."""
    scores, _ = _draw(rng, pis, legit_shift=legit_shift)
    counts = _binned(scores, reference.edges)
    f1, f0 = reference.densities()
    fitted = fit_prior(counts.astype(np.float64), f1, f0)
    rows = REFERENCE_WINDOWS * ROWS
    out: list[tuple[float, float, float]] = []
    for c, pi in zip(counts, fitted, strict=True):
        fit = goodness_of_fit(c, reference, float(pi), reference_rows=rows)
        out.append((fit.p_value, fit.tilt_p_value, fit.g / fit.inflation / fit.dof))
    return out


def test_misfit_p_values_are_uniform_under_pure_prior_drift() -> None:
    """200 windows drawn from the mixture itself, pi log-uniform in [0.001, 0.02]. One
    reference's own error moves all its windows' p-values together: over twelve seeds the
    share below 0.05 ranged 0.03 to 0.11, below 0.5 from 0.40 to 0.58."""
    rng = np.random.default_rng(14)
    reference = _reference(rng, 0.005)
    pis = np.exp(rng.uniform(np.log(0.001), np.log(0.02), 200))
    p = np.array(_fits(reference, pis, rng))[:, :2]
    for test in (0, 1):
        assert 0.01 <= (p[:, test] < 0.05).mean() <= 0.12
        assert 0.12 <= (p[:, test] < 0.25).mean() <= 0.40
        assert 0.35 <= (p[:, test] < 0.5).mean() <= 0.65
    assert (p < 0.001).mean() <= 0.01


def test_misfit_stays_calibrated_far_above_the_references_fraud_rate() -> None:
    """Windows at 20 times the reference's fraud rate (400 frauds a window against 280 in the
    reference): the fraud-dominated bins' expected counts rest on few reference frauds. With
    one inflation of ``1 + rows / reference rows`` for every bin, G / dof averaged 1.11 to
    1.17 and the G-test rejected 14% to 27% of these windows at 5% (six seeds of four
    references of 50 windows each); now 0.95 to 1.03 and 2% to 11%."""
    rng = np.random.default_rng(15)
    fits = []
    for _ in range(4):
        fits += _fits(_reference(rng, 0.001), np.full(50, 0.02), rng)
    p = np.array(fits)
    assert np.mean(p[:, 2]) == pytest.approx(1.0, abs=0.07)
    assert (p[:, 0] < 0.05).mean() <= 0.12
    assert (p[:, 1] < 0.05).mean() <= 0.12


def test_inflation_at_the_references_own_fraud_rate() -> None:
    """There the reference's error is ``1 / reference rows`` of each bin's share, against the
    window's ``1 / rows``: both tests divide by ``1 + rows / reference rows``."""
    rng = np.random.default_rng(16)
    reference = _reference(rng, 0.005)
    share = reference.positives.sum() / (reference.positives.sum() + reference.negatives.sum())
    counts = _binned(_draw(rng, np.array([0.005]))[0], reference.edges)[0]
    fit = goodness_of_fit(counts, reference, float(share), reference_rows=7 * ROWS)
    assert fit.inflation == pytest.approx(1.0 + ROWS / (7 * ROWS), rel=1e-12)
    assert fit.tilt_inflation == pytest.approx(1.0 + ROWS / (7 * ROWS), rel=1e-9)
    assert fit.p_value == chi2_sf(fit.g / fit.inflation, fit.dof)
    assert fit.tilt_p_value == chi2_sf(fit.tilt / fit.tilt_inflation, 1)
    assert set(fit.to_dict()) == {
        "g",
        "dof",
        "tilt",
        "inflation",
        "tilt_inflation",
        "dispersion",
        "tilt_dispersion",
        "p_value",
        "tilt_p_value",
    }


def test_a_shift_of_the_legitimate_scores_is_a_misfit() -> None:
    rng = np.random.default_rng(17)
    reference = _reference(rng, 0.005)
    pis = np.exp(rng.uniform(np.log(0.001), np.log(0.02), 30))
    p = np.array(_fits(reference, pis, rng, legit_shift=0.3))
    assert (p[:, 0] < 0.001).mean() >= 0.95


def test_the_expected_counts_themselves_fit_perfectly() -> None:
    rng = np.random.default_rng(18)
    reference = _reference(rng, 0.005)
    f1, f0 = reference.densities()
    counts = np.round(1e6 * (0.01 * f1 + 0.99 * f0)).astype(np.int64)
    pi = float(fit_prior(counts.astype(np.float64), f1, f0)[0])
    assert pi == pytest.approx(0.01, rel=1e-3)
    fit = goodness_of_fit(counts, reference, pi, reference_rows=REFERENCE_WINDOWS * ROWS)
    assert fit.g < 0.1
    assert fit.p_value > 0.999
    assert fit.tilt_p_value > 0.9
