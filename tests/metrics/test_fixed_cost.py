"""The worker's per-window shortcuts give the very floats of the code they replaced (issue 29):
the bootstrap's interval cut, one ``np.quantile`` call per group of columns with equally many
finite replicates, equals one call per column; the label arrivals' counting by lexsort equals
``np.unique(axis=0)``; the prior grid's PR-Gain areas and budget columns in one pass equal one
pass a prior; precision at k entries first equals it row by row; replicates drawn without their
amounts leave the random stream as they found it with them; the bootstrap given the caller's
point values gives the intervals it gives evaluating them itself (issues 24 and 29)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from app.metrics import Budget, build_sketch
from app.metrics import _kernel as kernel
from app.metrics._budget_kernel import TINY, precision_at_k, top_rows
from app.metrics._kernel import Prepared
from app.metrics._resampling import AmountSpread, merge_blocks, resample
from app.metrics.bootstrap import bootstrap
from app.metrics.percentiles import PercentileCut
from app.metrics.prior_grid import DEFAULT_PRIOR_GRID
from app.metrics.reporting import Arrivals
from app.metrics.result import EvaluationResult, counts_of, evaluate_sketch


def _cut_one_column_at_a_time(
    cut: PercentileCut,
    columns: list[list[np.ndarray]],
    centres: list[float | None],
    bases: list[float],
) -> list[tuple[float, float] | None]:
    """The cut as it was: one ``np.quantile`` call per column with missing replicates."""
    alpha = (1.0 - cut.level) / 2.0
    out: list[tuple[float, float] | None] = []
    for parts, centre, base in zip(columns, centres, bases, strict=True):
        x = np.concatenate(parts)
        x = x[np.isfinite(x)]
        if centre is None or not math.isfinite(base) or x.size < cut.replicates * (1 - alpha):
            out.append(None)
            continue
        lo, hi = np.quantile(x, [alpha, 1.0 - alpha])
        out.append((float(lo) + centre - base, float(hi) + centre - base))
    return out


def test_cut_by_groups_of_equal_finite_counts_gives_each_column_its_own_floats() -> None:
    rng = np.random.default_rng(29)
    for trial in range(200):
        replicates = int(rng.choice([10, 200, 1000]))
        matrix = rng.random((int(rng.integers(1, 40)), replicates))
        matrix = matrix.astype(np.float32 if trial % 2 else np.float64)
        for row in matrix:  # replicates without positives leave some columns NaN or inf
            missing = rng.random(replicates) < rng.choice([0.0, 0.0, 0.002, 0.02, 0.04, 0.5])
            row[missing] = np.nan if rng.random() < 0.7 else np.inf
        chunks = 1 if trial % 3 == 0 else 3  # one chunk: the cut's single-call stacking
        columns = [list(np.array_split(row, chunks)) for row in matrix]  # the replicate chunks
        centres = [None if rng.random() < 0.05 else float(rng.random()) for _ in columns]
        bases = [math.nan if rng.random() < 0.05 else float(rng.random()) for _ in columns]
        cut = PercentileCut(replicates, 0.95)
        expected = _cut_one_column_at_a_time(cut, columns, centres, bases)
        assert cut.intervals(columns, centres, bases) == expected


def test_arrivals_count_like_numpy_unique_rows() -> None:
    rng = np.random.default_rng(29)
    for trial in range(200):
        n = int(rng.integers(1, 3000))
        columns = [rng.integers(-1, int(rng.integers(1, 40)), n) for _ in range(3)]
        if trial % 5 == 0:
            columns[1] = np.full(n, -1)  # every arrival time unknown
        arrivals = Arrivals.of(frauds=(columns[0], columns[1], columns[2]), cleared=([], [], []))
        unique, counts = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
        assert np.array_equal(arrivals.fraud_bins, unique[:, 0])
        assert np.array_equal(arrivals.fraud_looks, unique[:, 1])
        assert np.array_equal(arrivals.fraud_sources, unique[:, 2])
        assert np.array_equal(arrivals.fraud_counts, counts)


@pytest.mark.parametrize("grid_cells", [kernel._GRID_CELLS, 2_000])
def test_the_prior_grid_in_one_pass_gives_each_priors_own_floats(
    grid_cells: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prepared.calibrated_grid (the PR-Gain areas of every prior at once, the budget, value
    and card columns of many priors a call) against one calibrated call a prior: every
    column's bytes, on float32 bootstrap replicates (windows with few frauds, so some
    replicates draw none and give NaN) and on a window's exact float64 counts, with ties, an
    alert budget, and on every other window amounts, cards and a review cost; with the grid's
    priors in one call, and in calls of a few priors (a small ``_GRID_CELLS``)."""
    monkeypatch.setattr(kernel, "_GRID_CELLS", grid_cells)
    rng = np.random.default_rng(49)
    priors = DEFAULT_PRIOR_GRID.priors(0.005)
    for trial in range(12):
        rows = int(rng.integers(200, 5000))
        labels = (rng.random(rows) < rng.choice([0.002, 0.01, 0.05])).astype(np.int64)
        labels[0] = 1
        scores = np.round(rng.normal(2.5 * labels, 1.0), int(rng.integers(1, 4)))  # ties
        fields = trial % 2 == 1
        cards = rng.integers(0, max(1, rows // 3), rows)
        extra = {"amounts": np.round(rng.lognormal(3.0, 1.2, rows), 2), "entities": cards}
        sketch = build_sketch(scores, labels, threshold=2.0, **(extra if fields else {}))
        counts = merge_blocks(sketch, 128) if sketch.scores.size > 128 else counts_of(sketch)
        distinct = int(np.unique(cards).size) if fields else 0
        budget = Budget.of(max(1, rows // 100), 2.0 if fields else None, rows, distinct).kernel()
        batches = [
            Prepared.of(counts, budgets=budget),
            Prepared.of(
                resample(counts, 300, rng, 30.0, AmountSpread.of(sketch, counts)),
                sequential=False,
                budgets=budget,
                entity_odds=kernel.entity_odds(counts),
            ),
        ]
        for prepared in batches:
            together = prepared.calibrated_grid(priors)
            for prior, columns in zip(priors, together, strict=True):
                alone = prepared.calibrated(prior)
                assert columns.keys() == alone.keys()
                for name, column in columns.items():
                    assert column.tobytes() == alone[name].tobytes(), (trial, prior, name)


def _precision_at_k_row_major(
    c: kernel._Curve, k: np.ndarray | None, top: np.ndarray
) -> np.ndarray:
    """Precision at k as it was: the weighted rows entry by entry along each row, the top's
    end by argmin, one row of weights ``(R,)`` a call."""
    above = c.fp + c.tp if k is None else np.multiply(c.fp, k[:, None])
    if k is not None:
        above += c.tp
    last = above.shape[1] - 1
    below = above < top[:, None]
    j = np.where(below[:, last], last, np.argmin(below, axis=1))
    pos, tied = c.pos[c.rows, j], c.tied[c.rows, j] * (1.0 if k is None else k)
    strictly_above = above[c.rows, j] - pos - tied
    inside = np.clip(top - strictly_above, 0.0, None)
    caught = c.tp[c.rows, j] - pos + inside * pos / np.maximum(pos + tied, TINY)
    caught = np.where(above[:, last] < top, c.npos, caught)
    result: np.ndarray = caught / top
    return result


def test_precision_at_k_entries_first_gives_the_row_major_floats() -> None:
    """precision_at_k (entries first, the top's end by a count, every prior of a grid in one
    call) against the row-major expression it replaced, one call a row of weights: the same
    bytes, regular and calibrated, float32 replicates (some with no rows drawn: NaN) and
    float64 counts, ties, tops inside, at and past the curve's ends."""
    rng = np.random.default_rng(71)
    priors = DEFAULT_PRIOR_GRID.priors(0.005)
    np.seterr(divide="ignore", invalid="ignore")  # empty replicates: NaN, as in the kernel
    for trial in range(40):
        rows = int(rng.integers(50, 4000))
        labels = (rng.random(rows) < rng.choice([0.002, 0.01, 0.05])).astype(np.int64)
        labels[0] = 1
        scores = np.round(rng.normal(2.5 * labels, 1.0), int(rng.integers(0, 4)))  # ties
        counts = counts_of(build_sketch(scores, labels, threshold=2.0))
        if trial % 2:
            counts = resample(counts, 200, rng, 30.0, None)
        prepared = Prepared.of(counts, sequential=trial % 2 == 0)
        c = prepared.curve
        share = rng.choice([0.0005, 0.01, 0.2, 1.0, 1.5])  # past the end: every row in the top
        weights = np.stack([prepared._weight(prior) for prior in priors])
        cases = [(None, top_rows(c, None, share))] + [(k, top_rows(c, k, share)) for k in weights]
        for k, top in cases:
            expected = _precision_at_k_row_major(c, k, top)
            assert precision_at_k(c, k, top).tobytes() == expected.tobytes(), (trial, share)
        together = precision_at_k(c, weights, top_rows(c, weights, share))
        for g, (k, top) in enumerate(cases[1:]):
            expected = _precision_at_k_row_major(c, k, top)
            assert together[g].tobytes() == expected.tobytes(), (trial, share, g)


def test_replicates_without_their_amounts_draw_the_same_stream() -> None:
    """With cards the bootstrap leaves the rows' replicate amounts out (the card bootstrap
    draws the value metrics): the counts are the same, no amounts come out, and the generator
    is left where the amounts' draws leave it, so every later draw is the same."""
    rng = np.random.default_rng(5)
    labels = (rng.random(5000) < 0.01).astype(np.int64)
    amounts = np.round(rng.lognormal(3.0, 1.2, 5000), 2)
    sketch = build_sketch(rng.normal(2.5 * labels, 1.0), labels, threshold=2.0, amounts=amounts)
    counts = counts_of(sketch)
    spread = AmountSpread.of(sketch, counts)
    assert spread is not None
    wanted, unwanted = np.random.default_rng(11), np.random.default_rng(11)
    full = resample(counts, 300, wanted, 30.0, spread)
    bare = resample(counts, 300, unwanted, 30.0, dataclasses.replace(spread, wanted=False))
    assert full.amounts is not None
    assert bare.amounts is None
    for name in ("positives_at", "negatives_tied", "negatives_between", "negatives_below"):
        assert getattr(full, name).tobytes() == getattr(bare, name).tobytes(), name
    assert wanted.random() == unwanted.random()


def test_the_bootstrap_given_its_point_values_gives_the_same_intervals() -> None:
    """The worker hands the bootstrap the segment's evaluation (its centres) instead of
    letting it evaluate the sketch a second time: every interval and the prior grid's bytes
    are the same, with an alert budget, amounts, cards and a review cost. A point at another
    pi0 moves the centres (the check can fail)."""
    rng = np.random.default_rng(52)
    rows = 4000
    labels = (rng.random(rows) < 0.01).astype(np.int64)
    labels[0] = 1
    cards = rng.integers(0, rows // 3, rows)
    sketch = build_sketch(
        np.round(rng.normal(2.5 * labels, 1.0), 2),
        labels,
        threshold=2.0,
        amounts=np.round(rng.lognormal(3.0, 1.2, rows), 2),
        entities=cards,
    )
    budget = Budget.of(rows // 100, 2.0, rows, int(np.unique(cards).size))

    def intervals(point: EvaluationResult | None = None) -> tuple[dict[str, object], bytes]:
        found = bootstrap(
            sketch,
            pi0=0.005,
            seed=3,
            replicates=200,
            grid=DEFAULT_PRIOR_GRID,
            budget=budget,
            point=point,
        )
        assert found.grid is not None
        return found.to_dict(), found.grid.to_bytes()

    alone = intervals()
    assert intervals(point=evaluate_sketch(sketch, pi0=0.005, budget=budget)) == alone
    assert intervals(point=evaluate_sketch(sketch, pi0=0.01, budget=budget)) != alone
