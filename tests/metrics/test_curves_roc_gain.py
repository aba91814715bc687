"""The window's ROC and PR-Gain curves (issue 27: drawn beside the PR curve).

ROC: the sketch's corners equal scikit-learn's ``roc_curve`` point for point, once the
collinear points it keeps (``drop_intermediate`` drops only some) are removed from both.
PR-Gain: every threshold's point from scikit-learn's precision and recall, turned into gains
(Flach & Kull 2015), lies on the curve, and the curve's trapezoid area is the kernel's
``pr_gain_auc``, measured and calibrated.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from sklearn.metrics import precision_recall_curve, roc_curve

from app.metrics import build_sketch, evaluate_sketch
from app.metrics.curves import pr_gain_curve, roc_points

Window = tuple[npt.NDArray[np.float64], npt.NDArray[np.int8]]


def _window(seed: int, rows: int = 3000, pi: float = 0.04, digits: int = 2) -> Window:
    """Binormal scores rounded to ``digits`` (many ties), labels at fraud rate ``pi``."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(rows) < pi).astype(np.int8)
    scores = np.where(labels == 1, rng.normal(1.2, 1.3, rows), rng.normal(0.0, 1.0, rows))
    return np.round(scores, digits).astype(np.float64), labels


def _turns(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The polyline's corners: duplicates and points inside straight runs removed."""
    points = [(float(a), float(b)) for a, b in zip(x, y, strict=True)]
    distinct = [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]
    kept = [distinct[0]]
    for i in range(1, len(distinct) - 1):
        here, after = distinct[i], distinct[i + 1]
        before = kept[-1]
        cross = (here[0] - before[0]) * (after[1] - here[1]) - (here[1] - before[1]) * (
            after[0] - here[0]
        )
        if abs(cross) > 1e-12:
            kept.append(here)
    kept.append(distinct[-1])
    return np.array(kept)


def _among(points: npt.NDArray[np.float64], among: npt.NDArray[np.float64]) -> bool:
    """Whether each point has one of ``among`` within 1e-9 (the two compute gains apart)."""
    gaps = np.abs(points[:, None, :] - among[None, :, :]).max(axis=2)
    return bool(np.all(gaps.min(axis=1) < 1e-9))


@pytest.mark.parametrize(("seed", "digits"), [(1, 2), (2, 1), (3, 4), (4, 0)])
def test_roc_corners_equal_scikit_learn(seed: int, digits: int) -> None:
    scores, labels = _window(seed, digits=digits)
    curve = roc_points(build_sketch(scores, labels, threshold=0.5), max_points=10_000)
    fpr, tpr, _ = roc_curve(labels, scores)
    expected = _turns(fpr, tpr)
    assert np.column_stack([curve.fpr, curve.tpr]) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("seed", [5, 6, 7])
@pytest.mark.parametrize("pi0", [None, 0.002, 0.04, 0.3])
def test_pr_gain_points_and_area(seed: int, pi0: float | None) -> None:
    scores, labels = _window(seed, digits=2)
    sketch = build_sketch(scores, labels, threshold=0.5)
    curve = pr_gain_curve(sketch, pi0=pi0, max_points=10_000)
    prior = labels.mean() if pi0 is None else pi0

    # Each threshold's (recall gain, precision gain) from scikit-learn's precision and recall
    # (precision calibrated to pi0 when pi0 is given), where recall gain is not negative.
    precision, recall, thresholds = precision_recall_curve(labels, scores)
    keep = recall > 0
    precision, recall, thresholds = precision[keep], recall[keep], thresholds[keep[:-1]]
    if pi0 is not None:
        pi = labels.mean()
        k = pi * (1 - pi0) / (pi0 * (1 - pi))
        precision = precision / (precision + k * (1 - precision))
    rg = (recall - prior) / ((1 - prior) * recall)
    pg = (precision - prior) / ((1 - prior) * precision)
    ok = rg >= 0
    sklearn = np.column_stack([rg[ok], pg[ok]])
    drawn = np.column_stack([curve.recall_gain, curve.precision_gain])
    # Every threshold at a fraud's score is drawn; every drawn point but the crossing of recall
    # gain 0 is a threshold's (the curve leaves out thresholds between two frauds' scores,
    # which lie on a vertical run).
    at_frauds = sklearn[np.isin(thresholds[ok], scores[labels == 1])]
    assert _among(at_frauds, drawn)
    assert _among(drawn[1:], sklearn)
    assert tuple(drawn[-1]) == (1.0, 0.0)
    assert curve.recall_gain[0] == 0.0
    assert curve.recall_gain[-1] == pytest.approx(1.0, abs=1e-15)
    assert np.all(np.diff(curve.recall_gain) >= 0)

    area = float(
        np.sum(
            np.diff(curve.recall_gain) * (curve.precision_gain[1:] + curve.precision_gain[:-1]) / 2
        )
    )
    result = evaluate_sketch(sketch, pi0=0.04 if pi0 is None else pi0)
    kernel = result.regular if pi0 is None else result.calibrated
    assert area == pytest.approx(kernel["pr_gain_auc"], abs=1e-12)


def test_precision_gain_does_not_depend_on_the_prior() -> None:
    sketch = build_sketch(*_window(8), threshold=0.5)
    measured, calibrated = pr_gain_curve(sketch), pr_gain_curve(sketch, pi0=0.01)
    tail = min(measured.precision_gain.size, calibrated.precision_gain.size) - 1
    assert measured.precision_gain[-tail:] == pytest.approx(calibrated.precision_gain[-tail:])


def test_curves_without_both_classes_are_empty() -> None:
    only_frauds = build_sketch([0.9, 0.8], [1, 1], threshold=0.5)
    only_legit = build_sketch([0.9, 0.8], [0, 0], threshold=0.5)
    for sketch in (only_frauds, only_legit):
        assert roc_points(sketch).fpr.size == 0
        assert pr_gain_curve(sketch).recall_gain.size == 0


def test_long_curves_are_downsampled_with_their_ends() -> None:
    sketch = build_sketch(*_window(9, rows=50_000, digits=4), threshold=0.5)
    curve = roc_points(sketch, max_points=50)
    assert curve.fpr.size <= 50
    assert (curve.fpr[0], curve.tpr[0], curve.fpr[-1], curve.tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    gain = pr_gain_curve(sketch, max_points=50)
    assert gain.recall_gain.size <= 50
    assert gain.recall_gain[0] == 0.0
