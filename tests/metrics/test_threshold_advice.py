"""The threshold advice's arithmetic (app.metrics.threshold_advice), and a smoke run of the
bench that measures whether following it works (bench/threshold_advice.py)."""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics import InvalidInputError, build_sketch, evaluate, threshold_advice
from app.metrics.threshold_advice import Situation, advise, dispersion, rates_at
from bench import threshold_advice as advice_bench


def _reference() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    labels = (rng.random(50_000) < 0.01).astype(np.int64)
    return rng.normal(size=labels.size) + 2.5 * labels, labels


def test_at_the_references_own_rate_the_current_threshold_shows_its_values() -> None:
    scores, labels = _reference()
    sketch = build_sketch(scores, labels, threshold=2.0)
    measured = evaluate(scores, labels, threshold=2.0, pi0=0.01)
    pi = measured.positives / measured.n
    situation = Situation(
        pi=pi,
        pi_interval=None,
        rows=float(measured.n),
        threshold=2.0,
        capacity=None,
        target_precision=None,
    )
    advice = advise(sketch, situation, replicates=200)
    assert advice.current.threshold == 2.0
    assert advice.current.precision == pytest.approx(measured.regular["precision"], rel=1e-12)
    assert advice.current.recall == pytest.approx(measured.regular["recall"], rel=1e-12)
    assert advice.current.alerts == pytest.approx(measured.tp + measured.fp, rel=1e-12)
    assert rates_at(sketch, 2.0) == pytest.approx(
        (measured.regular["recall"], measured.regular["fpr"]), rel=1e-12
    )
    assert advice.within_capacity is None
    assert advice.capacity_reason == "the model has no alert_capacity"
    assert advice.current.value_recall is None  # the reference's rows carry no amounts


def test_the_value_recall_to_expect_is_the_references_at_each_threshold() -> None:
    """With amounts, each advised threshold says what share of the fraud amount it catches:
    the reference's own value recall there (it involves frauds only: the same at any fraud
    rate), with an interval around it."""
    scores, labels = _reference()
    rng = np.random.default_rng(6)
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    sketch = build_sketch(scores, labels, threshold=2.0, amounts=amounts)
    situation = Situation(
        pi=0.02,
        pi_interval=(0.015, 0.025),
        rows=50_000.0,
        threshold=2.0,
        capacity=600,
        target_precision=None,
    )
    advice = advise(sketch, situation, replicates=300)
    for expected in (advice.current, advice.within_capacity):
        assert expected is not None
        flagged = (scores >= expected.threshold) & (labels == 1)
        direct = amounts[flagged].sum() / amounts[labels == 1].sum()
        assert expected.value_recall == pytest.approx(direct, rel=1e-9)
        assert expected.value_recall is not None
        assert expected.value_recall_ci is not None
        low, high = expected.value_recall_ci
        assert low < expected.value_recall < high
        assert high - low < 0.2


def test_capacity_and_precision_advice_move_the_right_way_and_bursts_widen_the_alerts() -> None:
    scores, labels = _reference()
    sketch = build_sketch(scores, labels, threshold=2.0)
    measured = evaluate(scores, labels, threshold=2.0, pi0=0.01)
    target = measured.regular["precision"]
    base = Situation(
        pi=0.02,
        pi_interval=(0.018, 0.022),
        rows=10_000.0,
        threshold=2.0,
        capacity=300,
        target_precision=target,
    )
    doubled = advise(sketch, base, replicates=400)
    assert doubled.within_capacity is not None
    assert doubled.restoring_precision is not None
    assert doubled.current.alerts > 300
    assert doubled.within_capacity.threshold > 2.0
    assert doubled.within_capacity.alerts_interval[1] <= 300
    assert doubled.restoring_precision.threshold < 2.0
    assert doubled.restoring_precision.precision is not None
    assert target is not None
    assert doubled.restoring_precision.precision >= target
    bursty = advise(sketch, Situation(**{**base.__dict__, "fraud_dispersion": 4.0}), replicates=400)
    assert bursty.within_capacity is not None
    assert bursty.within_capacity.threshold >= doubled.within_capacity.threshold
    spread = bursty.current.alerts_interval[1] - bursty.current.alerts_interval[0]
    assert spread > doubled.current.alerts_interval[1] - doubled.current.alerts_interval[0]
    tiny = advise(sketch, Situation(**{**base.__dict__, "capacity": 0}), replicates=100)
    assert tiny.within_capacity is None
    assert tiny.capacity_reason is not None


def test_dispersion_is_never_below_poisson_and_leans_high() -> None:
    assert dispersion(np.array([10.0, 10.0, 10.0])) == 1.0
    assert dispersion(np.array([0.0, 30.0]), confidence=0) == pytest.approx(450.0 / 15.0)
    # The upper end of an 80% one-sided interval of the variance: chi2(1) 20% quantile 0.0642.
    assert dispersion(np.array([0.0, 30.0])) == pytest.approx(30.0 / 0.06418475, rel=1e-6)
    assert dispersion(np.array([3.0])) == 1.0


@pytest.mark.slow
def test_the_bench_runs_and_keeps_the_budget_in_a_quick_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert advice_bench.main(["--quick"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 25")]
    assert lines
    for line in lines:
        within = float(line.split("|")[4].split("%")[0])
        assert within >= 85.0, line  # three streams: a smoke check, the table has 30


def test_a_tiny_reference_is_advised_on_or_refused_cleanly() -> None:
    """Replicates that draw no fraud are left out (no NaN reaches a Poisson draw); a reference
    where most replicates have none is refused with InvalidInputError, not a crash."""
    small = build_sketch([0.9, 0.8, 0.3, 0.2, 0.1, 0.05], [1, 1, 0, 0, 0, 0], threshold=0.5)
    situation = Situation(
        pi=0.3, pi_interval=(0.1, 0.5), rows=6.0, threshold=0.5, capacity=2, target_precision=0.5
    )
    advice = advise(small, situation, replicates=200)
    assert advice.current.precision is not None
    lone = build_sketch([0.9, 0.3], [1, 0], threshold=0.5)  # 40% of draws have both classes
    with pytest.raises(InvalidInputError, match="too small"):
        advise(lone, Situation(**{**situation.__dict__, "rows": 2.0}), replicates=200)


def test_a_reference_with_few_frauds_widens_only_the_value_recall_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Value recall's interval is read at the expanded tail for the reference's frauds (as the
    window's value metrics: app/metrics/percentiles.py); precision's and recall's are not."""
    rng = np.random.default_rng(8)
    labels = (rng.random(1500) < 0.01).astype(np.int64)
    scores = rng.normal(size=labels.size) + 2.5 * labels
    amounts = np.exp(rng.normal(3.0 + labels, 1.2))
    sketch = build_sketch(scores, labels, threshold=2.0, amounts=amounts)
    situation = Situation(
        pi=0.01, pi_interval=None, rows=1500.0, threshold=2.0, capacity=None, target_precision=None
    )
    expanded = advise(sketch, situation, replicates=400).current
    monkeypatch.setattr(threshold_advice, "expanded_tail", lambda level, units: (1 - level) / 2)
    nominal = advise(sketch, situation, replicates=400).current
    assert expanded.precision_ci == nominal.precision_ci
    assert expanded.recall_ci == nominal.recall_ci
    assert expanded.value_recall_ci is not None
    assert nominal.value_recall_ci is not None
    wide, narrow = expanded.value_recall_ci, nominal.value_recall_ci
    assert wide[0] <= narrow[0]
    assert narrow[1] <= wide[1]
    assert wide[1] - wide[0] > narrow[1] - narrow[0]
