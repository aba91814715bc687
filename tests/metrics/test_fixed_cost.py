"""The worker's per-window shortcuts give the very floats of the code they replaced (issue 29):
the bootstrap's interval cut, one ``np.quantile`` call per group of columns with equally many
finite replicates, equals one call per column; the label arrivals' counting by lexsort equals
``np.unique(axis=0)``; the prior grid's PR-Gain areas in one pass equal one pass a prior."""

from __future__ import annotations

import math

import numpy as np

from app.metrics import Budget, build_sketch
from app.metrics._kernel import Prepared
from app.metrics._resampling import merge_blocks, resample
from app.metrics.percentiles import PercentileCut
from app.metrics.prior_grid import DEFAULT_PRIOR_GRID
from app.metrics.reporting import Arrivals
from app.metrics.result import counts_of


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


def test_the_prior_grid_in_one_pass_gives_each_priors_own_floats() -> None:
    """Prepared.calibrated_grid (the PR-Gain areas of every prior at once) against one
    calibrated call a prior: every column's bytes, on float32 bootstrap replicates (windows with
    few frauds, so some replicates draw none and give NaN) and on a window's exact float64
    counts, with ties and an alert budget."""
    rng = np.random.default_rng(49)
    priors = DEFAULT_PRIOR_GRID.priors(0.005)
    for trial in range(12):
        rows = int(rng.integers(200, 5000))
        labels = (rng.random(rows) < rng.choice([0.002, 0.01, 0.05])).astype(np.int64)
        labels[0] = 1
        scores = np.round(rng.normal(2.5 * labels, 1.0), int(rng.integers(1, 4)))  # ties
        sketch = build_sketch(scores, labels, threshold=2.0)
        counts = merge_blocks(sketch, 128) if sketch.scores.size > 128 else counts_of(sketch)
        budget = Budget.of(max(1, rows // 100), None, rows).kernel()
        batches = [
            Prepared.of(counts, budgets=budget),
            Prepared.of(resample(counts, 300, rng, 30.0, None), sequential=False, budgets=budget),
        ]
        for prepared in batches:
            together = prepared.calibrated_grid(priors)
            for prior, columns in zip(priors, together, strict=True):
                alone = prepared.calibrated(prior)
                assert columns.keys() == alone.keys()
                for name, column in columns.items():
                    assert column.tobytes() == alone[name].tobytes(), (trial, prior, name)
