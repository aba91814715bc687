"""evaluate_sketches: a batch of sketches of different sizes equals one-by-one evaluation."""

from __future__ import annotations

import numpy as np

from app.metrics import Budget, CurveSketch, build_sketch, evaluate_sketch, evaluate_sketches


def _sketches() -> list[CurveSketch]:
    rng = np.random.default_rng(8)
    out = []
    for n, pi, ties in [
        (40, 0.3, False),
        (5_000, 0.01, False),
        (3_000, 0.05, True),
        (7, 0.5, True),
    ]:
        labels = rng.random(n) < pi
        scores = rng.normal(size=n) + 2.0 * labels
        if ties:
            scores = np.round(scores, 1)
        out.append(build_sketch(scores, labels, threshold=1.0))
    # Threshold above and below every score, one class only, a single row.
    out.append(build_sketch([0.1, 0.2, 0.9], [0, 1, 1], threshold=5.0))
    out.append(build_sketch([0.1, 0.2, 0.9], [0, 1, 0], threshold=-5.0))
    out.append(build_sketch([0.1, 0.2, 0.3], [0, 0, 0], threshold=0.2))
    out.append(build_sketch([0.4], [1], threshold=0.2))
    return out


def test_a_batch_equals_one_by_one_bit_for_bit() -> None:
    sketches = _sketches()
    for pi0 in (0.001, 0.2):
        batch = evaluate_sketches(sketches, pi0=pi0)
        single = [evaluate_sketch(s, pi0=pi0) for s in sketches]
        assert [r.to_dict() for r in batch] == [r.to_dict() for r in single]
    assert evaluate_sketches([], pi0=0.1) == []


def test_a_batch_with_alert_budgets_equals_one_by_one_bit_for_bit() -> None:
    """Each sketch at its own share of the alert budget, some without one."""
    sketches = _sketches()
    shares: list[float | None] = [0.1, None, 0.02, 1.0, 0.5, 0.34, None, 1.0]
    batch = evaluate_sketches(sketches, pi0=0.05, budgets=[Budget(share=a) for a in shares])
    single = [
        evaluate_sketch(s, pi0=0.05, budget=Budget(share=a))
        for s, a in zip(sketches, shares, strict=True)
    ]
    assert [r.to_dict() for r in batch] == [r.to_dict() for r in single]
    assert batch[0].regular["precision_at_k"] is not None
    assert batch[1].regular["precision_at_k"] is None
