"""Parity with scikit-learn and with the PR-Gain reference algorithm, to 1e-12."""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt
import pytest
from sklearn.metrics import (
    average_precision_score,
    precision_recall_fscore_support,
    roc_auc_score,
)

from app.metrics import METRIC_NAMES, build_sketch, evaluate
from app.metrics.types import Float64Array


def _windows(seed: int, count: int) -> list[tuple[Float64Array, npt.NDArray[np.int64], float]]:
    """Random windows with both classes: tiny ones, heavy ties, continuous scores."""
    rng = np.random.default_rng(seed)
    out: list[tuple[Float64Array, npt.NDArray[np.int64], float]] = []
    while len(out) < count:
        n = int(rng.choice([2, 3, 5, 8, 20, 100, 1000]))
        kind = len(out) % 3
        if kind == 0:  # heavy ties: a handful of distinct values
            scores = rng.integers(0, 4, n) / 3.0
        elif kind == 1:  # continuous
            scores = rng.normal(size=n)
        else:  # mixed: ties at some values, a logit-like scale
            scores = np.round(rng.normal(size=n) * 3.0, 1)
        labels = (rng.random(n) < rng.uniform(0.05, 0.9)).astype(np.int64)
        if 0 < labels.sum() < n:
            out.append((scores, labels, float(rng.choice(scores))))
    return out


def test_matches_sklearn_to_1e12() -> None:
    for scores, labels, threshold in _windows(seed=7, count=150):
        _check_matches_sklearn_to_1e12(scores, labels, threshold)


def _check_matches_sklearn_to_1e12(
    scores: Float64Array, labels: npt.NDArray[np.int64], threshold: float
) -> None:
    result = evaluate(scores, labels, threshold=threshold, pi0=0.1)
    predicted = (scores >= threshold).astype(np.int64)
    reg = result.regular
    assert reg["average_precision"] == pytest.approx(
        average_precision_score(labels, scores), abs=1e-12
    )
    assert reg["roc_auc"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    precision, recall, f1, _ = precision_recall_fscore_support(
        labels, predicted, average="binary", zero_division=np.nan
    )
    assert reg["recall"] == pytest.approx(recall, abs=1e-12)
    assert reg["f1"] == pytest.approx(f1, abs=1e-12)
    if predicted.any():
        assert reg["precision"] == pytest.approx(precision, abs=1e-12)
    else:
        assert reg["precision"] is None
        assert "regular.precision" in result.undefined
    tp = int(np.sum(predicted & labels))
    assert result.confusion == {
        "tp": tp,
        "fp": int(predicted.sum()) - tp,
        "tn": int(np.sum((1 - predicted) & (1 - labels))),
        "fn": int(labels.sum()) - tp,
    }


def test_best_f1_is_the_maximum_over_every_threshold() -> None:
    for scores, labels, threshold in _windows(seed=8, count=60):
        _check_best_f1_is_the_maximum_over_every_threshold(scores, labels, threshold)


def _check_best_f1_is_the_maximum_over_every_threshold(
    scores: Float64Array, labels: npt.NDArray[np.int64], threshold: float
) -> None:
    pi0 = 0.3
    result = evaluate(scores, labels, threshold=threshold, pi0=pi0)
    candidates = np.unique(scores)[::-1]  # descending: argmax then picks the highest threshold
    predicted = scores[None, :] >= candidates[:, None]
    tp = (predicted & (labels == 1)).sum(axis=1)
    fp = (predicted & (labels == 0)).sum(axis=1)
    fn = labels.sum() - tp
    pi = labels.mean()
    k = pi * (1 - pi0) / (pi0 * (1 - pi))
    for variant, weight in (("regular", 1.0), ("calibrated", k)):
        f1 = 2 * tp / (2 * tp + weight * fp + fn)
        values = getattr(result, variant)
        assert values["best_f1"] == pytest.approx(f1.max(), abs=1e-12)
        near_best = np.flatnonzero(f1 >= f1.max() - 1e-12)
        assert values["best_f1_threshold"] in candidates[near_best]


def _reference_pr_gain_area(
    scores: Float64Array, labels: npt.NDArray[np.int64], prior: float
) -> float:
    """The reference algorithm of meeliskull/prg (calc_auprg), written out point by point.

    One point per distinct score (descending), the segment crossing recall gain 0 cut at the
    point interpolated in contingency space, then trapezoids from every point with recall gain
    >= 0. ``prior`` plays pi in recall gain (pi0 for the calibrated variant).
    """
    p_total = float(labels.sum())
    n_total = float(labels.size - labels.sum())
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    points = [(0.0, 0.0)]
    tp = fp = 0.0
    for i in range(s.size):
        tp += y[i]
        fp += 1 - y[i]
        if i == s.size - 1 or s[i + 1] != s[i]:
            points.append((tp, fp))

    def rg(t: float) -> float:
        rec = t / p_total
        return (rec - prior) / ((1.0 - prior) * rec) if t > 0 else -np.inf

    def pg(t: float, f: float) -> float:
        return 1.0 - (p_total / n_total) * (f / t)

    curve: list[tuple[float, float]] = []
    for (t0, f0), (t1, f1) in itertools.pairwise(points):
        if not curve and rg(t0) < 0 < rg(t1):  # rg(0) is -inf
            t_x = prior * p_total
            f_x = f0 + (t_x - t0) / (t1 - t0) * (f1 - f0)
            curve.append((0.0, pg(t_x, f_x)))
        if curve or (t1 > 0 and rg(t1) >= 0):
            curve.append((rg(t1), pg(t1, f1)))
    return sum((x1 - x0) * (y0 + y1) / 2.0 for (x0, y0), (x1, y1) in itertools.pairwise(curve))


def test_pr_gain_area_follows_the_reference_algorithm() -> None:
    for scores, labels, threshold in _windows(seed=9, count=120):
        _check_pr_gain_area_follows_the_reference_algorithm(scores, labels, threshold)


def _check_pr_gain_area_follows_the_reference_algorithm(
    scores: Float64Array, labels: npt.NDArray[np.int64], threshold: float
) -> None:
    pi0 = 0.2
    result = evaluate(scores, labels, threshold=threshold, pi0=pi0)
    assert result.regular["pr_gain_auc"] == pytest.approx(
        _reference_pr_gain_area(scores, labels, result.pi), abs=1e-12
    )
    assert result.calibrated["pr_gain_auc"] == pytest.approx(
        _reference_pr_gain_area(scores, labels, pi0), abs=1e-12
    )


def test_pr_gain_area_of_a_perfect_ranking_is_one() -> None:
    scores = np.array([0.9, 0.8, 0.3, 0.2, 0.1])
    labels = np.array([1, 1, 0, 0, 0])
    result = evaluate(scores, labels, threshold=0.5, pi0=0.3)
    assert result.regular["pr_gain_auc"] == pytest.approx(1.0, abs=1e-15)
    assert result.calibrated["pr_gain_auc"] == pytest.approx(1.0, abs=1e-15)


def test_roc_points_give_the_calibrated_average_precision() -> None:
    for scores, labels, threshold in _windows(seed=10, count=60):
        _check_roc_points_give_the_calibrated_average_precision(scores, labels, threshold)


def _check_roc_points_give_the_calibrated_average_precision(
    scores: Float64Array, labels: npt.NDArray[np.int64], threshold: float
) -> None:
    """The skew module's rank-inversion code integrates AP from roc_points(); it must agree."""
    sketch = build_sketch(scores, labels, threshold=threshold)
    tpr, fpr = sketch.roc_points()
    for pi in (0.01, 0.3, 0.9):
        precision = pi * tpr / (pi * tpr + (1.0 - pi) * fpr)
        ap = float(np.sum(np.diff(tpr, prepend=0.0) * precision))
        expected = evaluate(scores, labels, threshold=threshold, pi0=pi).calibrated
        assert ap == pytest.approx(expected["average_precision"], abs=1e-12)


def test_result_keys_are_the_registry() -> None:
    result = evaluate([0.1, 0.7, 0.4], [0, 1, 1], threshold=0.5, pi0=0.2)
    assert tuple(result.regular) == METRIC_NAMES
    assert tuple(result.calibrated) == METRIC_NAMES
    assert tuple(result.to_dict()["regular"]) == METRIC_NAMES
