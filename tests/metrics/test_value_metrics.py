"""The value metrics (issue 24): value recall, value precision and net savings, from amounts.

Checked against a direct computation on the raw rows (random windows with ties, zero amounts
and tiny windows), against windows resampled to pi0 for the calibrated values, and for the
sketch's own bookkeeping: bytes, pooling, batches and the bootstrap.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from app.metrics import (
    Budget,
    CurveSketch,
    InvalidInputError,
    bootstrap,
    build_sketch,
    evaluate_sketch,
    evaluate_sketches,
    pool_sketches,
)
from app.metrics.whatif import at_prior

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def _window(
    rng: np.random.Generator, n: int, pi: float, *, ties: bool
) -> tuple[Floats, Ints, Floats]:
    labels = (rng.random(n) < pi).astype(np.int64)
    scores = rng.normal(1.5 * labels, 1.0)
    if ties:
        scores = np.round(scores, 1)
    # Frauds are larger on average; some amounts are exactly 0 (a card check).
    amounts = rng.lognormal(3.0 + labels, 1.2)
    amounts[rng.random(n) < 0.05] = 0.0
    return scores, labels, amounts


def _direct(
    rows: tuple[Floats, Ints, Floats], threshold: float, pi0: float, cost: float
) -> dict[str, float]:
    """The definitions on the raw rows; calibrated: negatives weighted by k, the window rescaled
    to its size (n / (P + k N)), as the calibrated alerts are."""
    scores, labels, amounts = rows
    flagged = scores >= threshold
    fraud = labels == 1
    caught = float(amounts[fraud & flagged].sum())
    total = float(amounts[fraud].sum())
    legit = float(amounts[~fraud & flagged].sum())
    tp, fp = int((fraud & flagged).sum()), int((~fraud & flagged).sum())
    p, n = int(fraud.sum()), int((~fraud).sum())
    pi = p / (p + n)
    k = pi * (1 - pi0) / (pi0 * (1 - pi))
    scale = (p + n) / (p + k * n)
    return {
        "value_recall": caught / total,
        "value_precision": caught / (caught + legit),
        "net_savings": caught - cost * (tp + fp),
        "calibrated.value_precision": caught / (caught + k * legit),
        "calibrated.net_savings": caught * scale - cost * (tp + k * fp) * scale,
    }


@pytest.mark.parametrize(
    ("seed", "n", "ties"), [(1, 2_000, False), (2, 2_000, True), (3, 40, True), (4, 300, False)]
)
def test_values_equal_the_direct_computation(seed: int, n: int, ties: bool) -> None:
    rng = np.random.default_rng([24, 11, seed])
    scores, labels, amounts = _window(rng, n, 0.1, ties=ties)
    labels[:2] = [1, 0]  # both classes even in the tiny window
    threshold, pi0, cost = 1.0, 0.02, 7.5
    sketch = build_sketch(scores, labels, threshold=threshold, amounts=amounts)
    result = evaluate_sketch(sketch, pi0=pi0, budget=Budget(review_cost=cost))
    expected = _direct((scores, labels, amounts), threshold, pi0, cost)
    for key, value in expected.items():
        variant, name = key.split(".") if "." in key else ("regular", key)
        got = getattr(result, variant)[name]
        assert got == pytest.approx(value, rel=1e-12, abs=1e-9), key
    # Value recall does not depend on the prior: its calibrated value is the regular one.
    assert result.calibrated["value_recall"] == result.regular["value_recall"]


def test_worked_example() -> None:
    """Five transactions, threshold 0.5, review cost 2: the frauds of 100 and 50 are flagged,
    the fraud of 30 is missed, a legitimate 20 is flagged: 150 of 180 caught, 150 of 170
    flagged is fraud, net 150 - 2 x 3 alerts."""
    scores = [0.9, 0.7, 0.6, 0.2, 0.1]
    labels = [1, 1, 0, 1, 0]
    amounts = [100.0, 50.0, 20.0, 30.0, 5.0]
    sketch = build_sketch(scores, labels, threshold=0.5, amounts=amounts)
    result = evaluate_sketch(sketch, pi0=0.6, budget=Budget(review_cost=2.0))
    assert result.regular["value_recall"] == 150 / 180
    assert result.regular["value_precision"] == 150 / 170
    assert result.regular["net_savings"] == 150 - 2 * 3
    # At the window's own prior (3 frauds in 5) calibration changes nothing.
    assert result.calibrated["value_precision"] == pytest.approx(150 / 170)
    assert result.calibrated["net_savings"] == pytest.approx(144.0)


def test_undefined_values_say_why() -> None:
    scores, labels = [0.9, 0.7, 0.6, 0.2], [1, 0, 0, 1]
    missing = evaluate_sketch(
        build_sketch(scores, labels, threshold=0.5, amounts=[1.0, np.nan, 2.0, 3.0]),
        pi0=0.1,
        budget=Budget(review_cost=1.0),
    )
    for name in ("value_recall", "value_precision", "net_savings"):
        assert missing.regular[name] is None
        assert missing.calibrated[name] is None
        assert "amount" in missing.undefined[f"regular.{name}"]
    no_cost = evaluate_sketch(
        build_sketch(scores, labels, threshold=0.5, amounts=[1.0, 1.0, 2.0, 3.0]), pi0=0.1
    )
    assert no_cost.regular["value_precision"] == 0.25
    assert no_cost.regular["net_savings"] is None
    assert "review_cost" in no_cost.undefined["calibrated.net_savings"]
    free = evaluate_sketch(
        build_sketch(scores, labels, threshold=0.5, amounts=[0.0, 0.0, 0.0, 0.0]),
        pi0=0.1,
        budget=Budget(review_cost=1.0),
    )
    assert free.regular["value_recall"] is None
    assert "no amount" in free.undefined["regular.value_recall"]
    assert free.regular["value_precision"] is None
    assert free.regular["net_savings"] == -3.0
    nothing_flagged = evaluate_sketch(
        build_sketch([0.1, 0.2], [1, 0], threshold=0.5, amounts=[5.0, 1.0]), pi0=0.1
    )
    assert nothing_flagged.regular["value_recall"] == 0.0
    assert nothing_flagged.undefined["regular.value_precision"] == (
        "no amount at or above the threshold"
    )
    one_class = evaluate_sketch(
        build_sketch([0.9, 0.2], [0, 0], threshold=0.5, amounts=[5.0, 1.0]),
        pi0=0.1,
        budget=Budget(review_cost=1.0),
    )
    assert one_class.regular["net_savings"] == -1.0
    assert "both classes" in one_class.undefined["calibrated.net_savings"]


def test_bad_amounts_are_refused() -> None:
    for bad in ([-1.0, 1.0], [np.inf, 1.0]):
        with pytest.raises(InvalidInputError, match="amounts"):
            build_sketch([0.9, 0.1], [1, 0], threshold=0.5, amounts=bad)
    with pytest.raises(InvalidInputError, match="1 amounts for 2 scores"):
        build_sketch([0.9, 0.1], [1, 0], threshold=0.5, amounts=[1.0])


@pytest.mark.parametrize("pi0", [0.01, 0.05])
def test_calibrated_values_are_those_of_windows_resampled_to_pi0(pi0: float) -> None:
    """Draw large windows of m rows with m * pi0 frauds from the window's rows (with
    replacement): their mean value precision and net savings per row match the calibrated
    values within 4 standard errors (plus the ratio's O(1/m) bias for value precision)."""
    rng = np.random.default_rng([24, 12, round(pi0 * 100)])
    scores, labels, amounts = _window(rng, 5_000, 0.1, ties=True)
    threshold, cost = 1.2, 25.0
    sketch = build_sketch(scores, labels, threshold=threshold, amounts=amounts)
    result = evaluate_sketch(sketch, pi0=pi0, budget=Budget(review_cost=cost))
    fraud = labels == 1
    m = 40_000
    frauds = round(pi0 * m)
    precisions, savings, recalls = [], [], []
    for _ in range(200):
        i = rng.choice(np.flatnonzero(fraud), frauds)
        j = rng.choice(np.flatnonzero(~fraud), m - frauds)
        s, a = np.concatenate([scores[i], scores[j]]), np.concatenate([amounts[i], amounts[j]])
        flagged = s >= threshold
        caught = a[:frauds][flagged[:frauds]].sum()
        legit = a[frauds:][flagged[frauds:]].sum()
        precisions.append(caught / (caught + legit))
        savings.append((caught - cost * flagged.sum()) / m)
        recalls.append(caught / a[:frauds].sum())
    for name, draws, value in [
        ("value_precision", precisions, result.calibrated["value_precision"]),
        ("net_savings", savings, (result.calibrated["net_savings"] or 0.0) / result.n),
        ("value_recall", recalls, result.calibrated["value_recall"]),
    ]:
        mean, se = float(np.mean(draws)), float(np.std(draws, ddof=1) / np.sqrt(len(draws)))
        assert value is not None
        assert abs(mean - value) <= 4 * se + 2e-3 * abs(value), (name, mean, value, se)


def test_what_if_at_pi0_is_the_calibrated_value() -> None:
    rng = np.random.default_rng([24, 13])
    scores, labels, amounts = _window(rng, 3_000, 0.05, ties=False)
    sketch = build_sketch(scores, labels, threshold=1.0, amounts=amounts)
    budget = Budget(review_cost=3.0)
    calibrated = evaluate_sketch(sketch, pi0=0.02, budget=budget).calibrated
    what_if = at_prior(sketch, 0.02, budget).calibrated
    for name in ("value_recall", "value_precision", "net_savings"):
        assert what_if[name] == calibrated[name]


def test_sketch_keeps_its_amounts_in_bytes_and_json_and_in_any_row_order() -> None:
    rng = np.random.default_rng([24, 14])
    scores, labels, amounts = _window(rng, 500, 0.1, ties=True)
    sketch = build_sketch(scores, labels, threshold=1.0, amounts=amounts)
    assert sketch.amounts is not None
    assert CurveSketch.from_bytes(sketch.to_bytes()) == sketch
    assert CurveSketch.from_json(sketch.to_json()) == sketch
    order = rng.permutation(scores.size)
    shuffled = build_sketch(scores[order], labels[order], threshold=1.0, amounts=amounts[order])
    assert shuffled.to_bytes() == sketch.to_bytes()
    # Without amounts the sketch keeps its version-1 bytes (stored windows read back as before).
    plain = build_sketch(scores, labels, threshold=1.0)
    assert plain.to_bytes()[4] == 1
    assert sketch.to_bytes()[4] == 2
    assert sketch.to_bytes().startswith(plain.to_bytes()[:4])
    with pytest.raises(InvalidInputError, match="length"):
        CurveSketch.from_bytes(sketch.to_bytes()[:-8])


def test_pooled_amounts_are_those_of_the_pooled_rows() -> None:
    rng = np.random.default_rng([24, 15])
    windows = [_window(rng, 400, 0.1, ties=True) for _ in range(4)]
    sketches = [build_sketch(s, y, threshold=1.0, amounts=a) for s, y, a in windows]
    pooled = pool_sketches(sketches)
    direct = build_sketch(
        *(np.concatenate([w[i] for w in windows]) for i in range(2)),
        threshold=1.0,
        amounts=np.concatenate([w[2] for w in windows]),
    )
    assert pooled.amounts is not None
    assert direct.amounts is not None
    np.testing.assert_allclose(pooled.amounts.positive_at, direct.amounts.positive_at)
    assert pooled.amounts.negative_flagged == pytest.approx(direct.amounts.negative_flagged)
    # One window without amounts: the pool has none either.
    bare = build_sketch(windows[0][0], windows[0][1], threshold=1.0)
    assert pool_sketches([*sketches, bare]).amounts is None


def test_a_batch_equals_its_windows_one_by_one() -> None:
    rng = np.random.default_rng([24, 16])
    sketches = []
    for i, n in enumerate([50, 900, 300]):
        s, y, a = _window(rng, n, 0.1, ties=bool(i % 2))
        y[0] = 1
        sketches.append(build_sketch(s, y, threshold=1.0, amounts=None if i == 1 else a))
    budgets = [Budget(review_cost=2.0), Budget(), Budget(share=0.1, review_cost=0.5)]
    batch = evaluate_sketches(sketches, pi0=0.03, budgets=budgets)
    single = [
        evaluate_sketch(s, pi0=0.03, budget=b) for s, b in zip(sketches, budgets, strict=True)
    ]
    assert [r.to_dict() for r in batch] == [r.to_dict() for r in single]


def test_bootstrap_intervals_hold_the_values() -> None:
    rng = np.random.default_rng([24, 17])
    scores, labels, amounts = _window(rng, 20_000, 0.02, ties=False)
    sketch = build_sketch(scores, labels, threshold=1.0, amounts=amounts)
    budget = Budget(review_cost=5.0)
    point = evaluate_sketch(sketch, pi0=0.01, budget=budget)
    intervals = bootstrap(sketch, pi0=0.01, seed=1, replicates=400, budget=budget)
    for variant in ("regular", "calibrated"):
        for name in ("value_recall", "value_precision", "net_savings"):
            interval = getattr(intervals, variant)[name]
            value = getattr(point, variant)[name]
            assert interval is not None, (variant, name)
            assert interval[0] < value < interval[1], (variant, name)
