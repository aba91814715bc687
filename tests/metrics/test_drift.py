"""Drift decomposition: prior effect + performance effect = total change from the reference."""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics import (
    METRIC_NAMES,
    Budget,
    EvaluationResult,
    InvalidInputError,
    build_sketch,
    decompose,
    evaluate,
    evaluate_sketch,
)
from tests.support.synthetic import siblini_window


def _result(pi: float, mu1: float, seed: int, n: int = 30_000) -> EvaluationResult:
    rng = np.random.default_rng([77, seed])
    scores, labels = siblini_window(n, pi, mu1, 0.0, rng)
    # Every metric defined: the value and entity metrics too.
    amounts = rng.lognormal(3.0, 1.0, size=n)
    cards = rng.integers(0, n // 3, size=n)
    sketch = build_sketch(scores, labels, threshold=2.0, amounts=amounts, entities=cards)
    budget = Budget(share=0.01, review_cost=5.0, entity_share=0.02)
    return evaluate_sketch(sketch, pi0=0.005, budget=budget)


def test_effects_add_up_to_the_total_change() -> None:
    reference = _result(0.005, 2.0, seed=1)
    current = _result(0.02, 1.6, seed=2)
    decomposition = decompose(
        current.regular,
        current.calibrated,
        reference_regular=reference.regular,
        reference_calibrated=reference.calibrated,
    )
    assert set(decomposition.metrics) == set(METRIC_NAMES)
    for name, change in decomposition.metrics.items():
        assert change is not None, name
        regular_r, calibrated_r = reference.regular[name], reference.calibrated[name]
        assert regular_r is not None
        assert calibrated_r is not None
        assert change.total == current.regular[name] - regular_r  # type: ignore[operator]
        assert change.performance_effect == current.calibrated[name] - calibrated_r  # type: ignore[operator]
        assert change.prior_effect + change.performance_effect == pytest.approx(
            change.total, abs=1e-15
        )
    assert set(decomposition.to_dict()["metrics"]["average_precision"]) == {
        "total",
        "prior_effect",
        "performance_effect",
    }


def test_a_pure_prior_move_is_a_prior_effect() -> None:
    """Same model, fraud ratio 4x the reference's: the regular AP moves, the calibrated one
    does not (beyond noise), so almost all of the change is the prior's."""
    reference = _result(0.005, 2.0, seed=3, n=400_000)
    current = _result(0.02, 2.0, seed=4, n=100_000)
    change = decompose(
        current.regular,
        current.calibrated,
        reference_regular=reference.regular,
        reference_calibrated=reference.calibrated,
    ).metrics["average_precision"]
    assert change is not None
    assert change.total > 0.15
    assert abs(change.performance_effect) < 0.2 * change.total
    assert change.prior_effect > 0.8 * change.total


def test_undefined_values_give_no_effects_and_missing_metrics_are_refused() -> None:
    reference = _result(0.005, 2.0, seed=5)
    empty = evaluate([0.1, 2.5, 0.3], [0, 0, 0], threshold=2.0, pi0=0.005)
    decomposition = decompose(
        empty.regular,
        empty.calibrated,
        reference_regular=reference.regular,
        reference_calibrated=reference.calibrated,
    )
    assert decomposition.metrics["average_precision"] is None
    # Regular precision is defined (0: every flagged row was a false alarm), its calibrated
    # variant is not, so the decomposition of precision is undefined too.
    assert empty.regular["precision"] == 0.0
    assert decomposition.metrics["precision"] is None
    with pytest.raises(InvalidInputError, match="lack registry metrics"):
        decompose(
            {}, {}, reference_regular=reference.regular, reference_calibrated=reference.calibrated
        )
