"""The percentile cut's tail shares, and the value metrics' expanded percentile intervals
(Hesterberg 2015; app/metrics/percentiles.py)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student

from app.metrics import Budget, bootstrap, build_sketch
from app.metrics._card_bootstrap import VALUE_METRICS
from app.metrics.bootstrap import Intervals
from app.metrics.percentiles import PercentileCut, expanded_tail, quantiles_of_sorted
from app.metrics.prior_grid import PriorGrid
from app.metrics.types import FloatingArray


@pytest.mark.parametrize("units", [2, 3, 5, 10, 25, 100, 1000])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_the_expanded_tail_is_hesterbergs(units: int, level: float) -> None:
    """alpha' / 2 = Phi(-sqrt(n / (n - 1)) t_{n-1, 1 - alpha/2}), written with scipy.stats;
    below the nominal tail, approaching it."""
    alpha = (1 - level) / 2
    expected = norm.cdf(-math.sqrt(units / (units - 1)) * student.ppf(1 - alpha, units - 1))
    assert expanded_tail(level, units) == pytest.approx(expected, rel=1e-9)
    assert expanded_tail(level, units) < alpha
    assert expanded_tail(level, units) < expanded_tail(level, units + 1)


def test_expanded_tails_at_95_percent_and_below_two_units() -> None:
    # Hesterberg's table (2015, section 5.3): n = 10 reads the 0.86% and 99.14% percentiles.
    assert expanded_tail(0.95, 10) == pytest.approx(0.0086, abs=1e-4)
    assert expanded_tail(0.95, 25) == pytest.approx(0.0176, abs=1e-4)
    assert expanded_tail(0.95, 1000) == pytest.approx(0.0248, abs=1e-4)
    assert expanded_tail(0.95, 1) == 0.0  # the replicates' range
    assert expanded_tail(0.95, 0) == 0.0


def test_each_column_is_cut_at_its_own_tail_share() -> None:
    """Mixed tails in one call: each column's percentiles at its share, as one call on that
    column alone gives them (columns with NaNs included); default tails are the nominal."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((12, 400))
    matrix[3, :7] = np.nan
    columns = [[row[:150], row[150:]] for row in matrix]
    tails = [0.025, 0.0086, 0.0, 0.025, 0.01, 0.0086] * 2
    cut = PercentileCut(400, 0.95)
    got = cut.intervals(columns, [0.0] * 12, [0.0] * 12, tails)
    for row, share, interval in zip(matrix, tails, got, strict=True):
        finite = row[np.isfinite(row)]
        expected = np.quantile(finite, [share, 1 - share]).tolist()
        assert interval == pytest.approx(expected, rel=1e-12, abs=1e-14)
    assert cut.intervals(columns, [0.0] * 12, [0.0] * 12) == cut.intervals(
        columns, [0.0] * 12, [0.0] * 12, [(1 - 0.95) / 2] * 12
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [1, 2, 3, 10, 400, 999, 1000, 1001])
def test_quantiles_of_sorted_rows_are_numpys_bit_for_bit(dtype: type, count: int) -> None:
    """The percentile cut sorts rows and reads their quantiles itself: every float as
    np.quantile gives it, at the tails it uses (0 below two units, Hesterberg's expanded ones,
    the nominal), on heavy tails, ties and values of either sign (zeros of both signs)."""
    rng = np.random.default_rng(count)
    rows: FloatingArray = np.concatenate(
        [
            rng.standard_normal((6, count)),
            rng.lognormal(3.0, 2.0, (6, count)) - 50.0,
            np.round(rng.standard_normal((6, count)), 1),  # ties
        ]
    ).astype(dtype)
    for share in (0.0, 0.0086, 0.011671300553592659, 0.025, 0.3, 0.5):
        q = (share, 1.0 - share)
        expected = np.quantile(rows, q, axis=1)
        got = quantiles_of_sorted(np.sort(rows, axis=1), q)
        assert got.dtype == expected.dtype
        # The same bits, but for a zero's sign: which of -0.0 and 0.0 (equal values) lands at
        # an order statistic's place is the sort's or the partition's choice (+ 0.0 unsigns).
        assert (got + 0.0).tobytes() == (expected + 0.0).tobytes(), (share, dtype, count)


def _small_window(seed: int) -> tuple[np.ndarray, ...]:
    """About 12 frauds in 1,200 rows, amounts lognormal, 400 cards."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(1200) < 0.01).astype(np.int64)
    scores = rng.normal(2.5 * labels, 1.0)
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    return scores, labels, amounts, rng.integers(0, 400, 1200)


@pytest.mark.parametrize("cards", [False, True])
def test_only_the_value_metrics_intervals_widen(
    cards: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the same bootstrap with every metric at the nominal tail: the value metrics'
    intervals (regular, calibrated, on the prior grid) hold the nominal ones and are wider;
    every other interval is the same float for float. Net savings' interval is studentized
    (app/metrics/_studentized.py), read at the nominal tail of its t values: the same in both
    runs too."""
    scores, labels, amounts, codes = _small_window(4)
    sketch = build_sketch(
        scores, labels, threshold=2.0, amounts=amounts, entities=codes if cards else None
    )
    assert (sketch.entity_values is not None) == cards
    grid = PriorGrid(step=0.2, nodes_per_side=2)

    def run() -> Intervals:
        budget = Budget(review_cost=5.0)
        return bootstrap(sketch, pi0=0.005, seed=2, replicates=400, budget=budget, grid=grid)

    expanded = run()
    # The package exports the function bootstrap under the module's name: patch the module.
    module = sys.modules["app.metrics.bootstrap"]
    monkeypatch.setattr(module, "expanded_tail", lambda level, units: (1 - level) / 2)
    nominal = run()
    widened = [n for n in VALUE_METRICS if n != "net_savings"]
    for side in ("regular", "calibrated"):
        for name, interval in getattr(nominal, side).items():
            wide = getattr(expanded, side)[name]
            if name not in widened:
                assert wide == interval, (side, name)
                continue
            assert interval is not None, (side, name)
            assert wide is not None, (side, name)
            assert wide[0] <= interval[0], (side, name)
            assert interval[1] <= wide[1], (side, name)
            assert wide[1] - wide[0] > interval[1] - interval[0], (side, name)
    assert expanded.grid is not None
    assert nominal.grid is not None
    top = grid.priors(0.005)[-1]
    far, near = expanded.at_pi0(top), nominal.at_pi0(top)
    assert far is not None
    assert near is not None
    for name in ("value_precision", "net_savings"):
        wide, interval = far.calibrated[name], near.calibrated[name]
        assert wide is not None
        assert interval is not None
        if name in widened:
            assert wide[1] - wide[0] > interval[1] - interval[0], name
        else:
            assert wide == interval, name
    assert far.calibrated["precision"] == near.calibrated["precision"]
