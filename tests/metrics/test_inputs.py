"""Invalid input is rejected with a message that says what and where; undefined is explicit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.metrics import (
    CurveSketch,
    InvalidInputError,
    bootstrap,
    build_sketch,
    evaluate,
    evaluate_sketch,
    pr_curve,
)


@pytest.mark.parametrize(
    ("scores", "labels", "message"),
    [
        ([0.1, float("nan"), 0.3], [0, 1, 0], r"scores\[1\] is not finite \(nan\)"),
        ([0.1, 0.2, float("inf")], [0, 1, 0], r"scores\[2\] is not finite \(inf\)"),
        ([float("-inf"), 0.2], [0, 1], r"scores\[0\] is not finite \(-inf\)"),
        ([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 2], r"labels\[3\] = 2: labels must be 0 or 1"),
        ([0.1, 0.2], [-1, 1], r"labels\[0\] = -1"),
        ([0.1, 0.2], [0.0, 0.5], r"labels\[1\] = 0.5"),
        ([0.1, 0.2], [0.0, float("nan")], r"labels\[1\] = nan"),
        ([0.1, 0.2], ["a", "b"], r"labels must be 0/1 numbers or booleans"),
        ([0.1, 0.2, 0.3], [0, 1], r"length mismatch: 3 scores but 2 labels"),
        ([], [], r"empty window"),
        ([[0.1, 0.2]], [[0, 1]], r"1-d arrays"),
        (["x", "y"], [0, 1], r"scores must be real numbers"),
    ],
)
def test_bad_rows_are_named(scores: object, labels: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        evaluate(scores, labels, threshold=0.5, pi0=0.1)  # type: ignore[arg-type]


@pytest.mark.parametrize("pi0", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_pi0_outside_the_open_unit_interval_is_rejected(pi0: float) -> None:
    with pytest.raises(InvalidInputError, match="pi0 must lie strictly between 0 and 1"):
        evaluate([0.1, 0.9], [0, 1], threshold=0.5, pi0=pi0)


@pytest.mark.parametrize("threshold", [float("nan"), float("inf")])
def test_threshold_must_be_finite(threshold: float) -> None:
    with pytest.raises(InvalidInputError, match="threshold must be finite"):
        build_sketch([0.1, 0.9], [0, 1], threshold=threshold)


def test_invalid_input_is_a_value_error() -> None:
    assert issubclass(InvalidInputError, ValueError)


def test_boolean_and_float_labels_are_accepted() -> None:
    a = evaluate([0.2, 0.8, 0.6], [False, True, True], threshold=0.5, pi0=0.1)
    b = evaluate([0.2, 0.8, 0.6], [0.0, 1.0, 1.0], threshold=0.5, pi0=0.1)
    assert a.to_dict() == b.to_dict()


def test_no_positives_makes_positive_metrics_undefined_not_zero() -> None:
    result = evaluate([0.2, 0.8], [0, 0], threshold=0.5, pi0=0.1)
    d = result.to_dict()
    json.dumps(d, allow_nan=False)  # never NaN in JSON
    assert d["regular"]["precision"] == 0.0  # one false positive: a real 0
    for name in ("recall", "average_precision", "roc_auc", "best_f1", "f1"):
        assert d["regular"][name] is None
        assert d["undefined"][f"regular.{name}"] == "no positives in the window"
    assert d["calibrated"]["precision"] is None
    assert "both classes" in d["undefined"]["calibrated.precision"]


def test_no_negatives_makes_negative_metrics_undefined() -> None:
    result = evaluate([0.2, 0.8], [1, 1], threshold=0.5, pi0=0.1)
    assert result.regular["average_precision"] == 1.0
    assert result.regular["fpr"] is None
    assert result.undefined["regular.fpr"] == "no negatives in the window"
    assert result.calibrated["average_precision"] is None


def test_nothing_predicted_positive_leaves_precision_undefined() -> None:
    result = evaluate([0.2, 0.3, 0.4], [0, 1, 0], threshold=0.9, pi0=0.1)
    assert result.regular["precision"] is None
    assert result.calibrated["precision"] is None
    assert "nothing predicted positive" in result.undefined["regular.precision"]
    assert result.regular["recall"] == 0.0
    assert result.regular["f1"] == 0.0  # recall is 0: a real 0, as in scikit-learn
    assert result.regular["lr_plus"] is None  # FPR = 0


def test_sketch_bytes_are_versioned_and_checked() -> None:
    data = build_sketch([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], threshold=0.5).to_bytes()
    assert data[:4] == b"CMSK"
    with pytest.raises(InvalidInputError, match="version"):
        CurveSketch.from_bytes(data[:4] + b"\x09" + data[5:])
    with pytest.raises(InvalidInputError, match="length"):
        CurveSketch.from_bytes(data[:-1])
    with pytest.raises(InvalidInputError, match="header"):
        CurveSketch.from_bytes(b"CM")


def test_sketch_is_immutable() -> None:
    sketch = build_sketch([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], threshold=0.5)
    with pytest.raises(ValueError, match="read-only"):
        sketch.positives_at[0] = 5
    result = evaluate_sketch(sketch, pi0=0.2)
    with pytest.raises(TypeError):
        result.regular["precision"] = 1.0  # type: ignore[index]


def test_sketch_layout_on_a_small_window() -> None:
    # Scores descending: 0.9(+) 0.8(-) 0.7(+,-) 0.5(-) [threshold 0.6] 0.1(-)
    sketch = build_sketch([0.9, 0.8, 0.7, 0.7, 0.5, 0.1], [1, 0, 1, 0, 0, 0], threshold=0.6)
    assert sketch.scores.tolist() == [0.9, 0.7, 0.6]
    assert sketch.positives_at.tolist() == [1, 1, 0]
    assert sketch.negatives_tied.tolist() == [0, 1, 0]
    assert sketch.negatives_between.tolist() == [0, 1, 0]
    assert sketch.negatives_below == 2
    tpr, fpr = sketch.roc_points()
    assert tpr.tolist() == [0.5, 1.0]
    assert fpr.tolist() == [0.0, 0.5]
    with pytest.raises(InvalidInputError, match="both classes"):
        build_sketch([0.1, 0.2], [0, 0], threshold=0.5).roc_points()


def test_pr_curve_is_downsampled_and_calibrated() -> None:
    rng = np.random.default_rng(3)
    labels = rng.random(5000) < 0.2
    scores = rng.normal(size=5000) + labels
    sketch = build_sketch(scores, labels, threshold=0.5)
    curve = pr_curve(sketch, max_points=50)
    assert 2 <= curve.recall.size <= 50
    assert curve.recall[-1] == 1.0
    assert np.all(np.diff(curve.recall) > 0)
    full = pr_curve(sketch, max_points=10**6)
    assert full.recall.size == int(labels.sum())  # continuous scores: one point per positive
    result = evaluate(scores, labels, threshold=0.5, pi0=0.05)
    calibrated = pr_curve(sketch, pi0=0.05, max_points=10**6)
    steps = np.diff(calibrated.recall, prepend=0.0)
    ap = float(np.sum(steps * calibrated.precision))
    assert ap == pytest.approx(result.calibrated["average_precision"], abs=1e-12)
    assert pr_curve(build_sketch([0.1], [0], threshold=0.5)).recall.size == 0
    json.dumps(curve.to_dict())


def test_bootstrap_parameters_are_checked() -> None:
    sketch = build_sketch([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1], threshold=0.5)
    with pytest.raises(InvalidInputError, match="replicates"):
        bootstrap(sketch, pi0=0.1, seed=1, replicates=5)
    with pytest.raises(InvalidInputError, match="level"):
        bootstrap(sketch, pi0=0.1, seed=1, level=1.0)
