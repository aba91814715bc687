"""A reference's figures at a pi0, kept across passes by the sketch's bytes and the pi0."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from app.metrics import CurveSketch, NullModel, build_sketch, evaluate_sketch
from app.monitoring import reference_figures
from app.monitoring.alerts import FrozenReference, ReferenceAtPi0


def _sketch(seed: int) -> CurveSketch:
    rng = np.random.default_rng(seed)
    labels = rng.random(20_000) < 0.01
    return build_sketch(rng.normal(2.5 * labels, 1.0), labels, threshold=2.0)


def _frozen(sketch: CurveSketch, version: int = 1) -> FrozenReference:
    day = datetime(2026, 1, 1, tzinfo=UTC)
    return FrozenReference(version, day, day, 14, sketch.n, sketch.positives, sketch)


def test_a_pass_after_the_first_reads_the_kept_figures_and_they_are_the_computed_ones() -> None:
    sketch = _sketch(1)
    first = ReferenceAtPi0(_frozen(sketch), 0.01)
    # The next pass decodes the stored bytes again: another object, the same sketch.
    again = ReferenceAtPi0(_frozen(CurveSketch.from_bytes(sketch.to_bytes()), 2), 0.01)
    assert again.null_model is first.null_model
    assert again.result is first.result
    assert again.standard_error == first.standard_error
    null = NullModel.of(sketch, pi0=0.01)
    assert first.null_model.value == null.value
    assert first.standard_error == null.standard_error()
    assert first.result.calibrated == evaluate_sketch(sketch, pi0=0.01).calibrated


def test_another_pi0_or_another_sketch_is_another_key() -> None:
    sketch = _sketch(2)
    at_one = ReferenceAtPi0(_frozen(sketch), 0.01)
    assert ReferenceAtPi0(_frozen(sketch), 0.02).null_model is not at_one.null_model
    assert ReferenceAtPi0(_frozen(_sketch(3)), 0.01).null_model is not at_one.null_model


def test_the_least_recently_used_go_first(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = (_sketch(seed) for seed in (4, 5, 6))
    largest = max(len(sketch.to_bytes()) for sketch in (a, b, c))
    smallest = min(len(sketch.to_bytes()) for sketch in (a, b, c))
    # Room for any two of them, never three.
    monkeypatch.setattr(reference_figures, "KEPT_BYTES", 2 * largest)
    assert 3 * smallest > 2 * largest
    kept_a = reference_figures.figures_of(a, 0.01)
    kept_b = reference_figures.figures_of(b, 0.01)
    assert reference_figures.figures_of(a, 0.01) is kept_a  # a used last: b is the oldest
    reference_figures.figures_of(c, 0.01)
    assert reference_figures.figures_of(a, 0.01) is kept_a
    assert reference_figures.figures_of(b, 0.01) is not kept_b
