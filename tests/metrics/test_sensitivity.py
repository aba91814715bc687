"""Class-imbalance sensitivity (seed paper 002, "Measuring Class-Imbalance Sensitivity of
Deterministic Performance Evaluation Metrics", section 3 and Fig. 4).

The paper prints no sensitivity values (Fig. 4 is a plot), so its statements are tested: recall,
tss and Youden's J are imbalance agnostic; precision is the most sensitive, followed by f1,
accuracy and hss; sensitivity grows with the ratio and saturates ("logarithmic behaviour").
Exact values are checked against closed forms and scipy's dblquad instead.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import dblquad

from app.metrics.sensitivity import (
    SURFACE_METRICS,
    contingency_grid,
    imbalance_sensitivity,
    metric_surface,
)

RATIOS = (2.0, 10.0, 49.0, 1000.0)


@pytest.mark.parametrize("metric", ["recall", "tss", "youden"])
@pytest.mark.parametrize("ratio", RATIOS)
def test_recall_tss_and_youden_have_zero_sensitivity(metric: str, ratio: float) -> None:
    """Seed 002, Fig. 4: "Recall's sensitivity is indeed zero ... tss and Youden's J index are
    imbalance agnostic": 0 at every ratio (recall exactly; tss and youden divide r (1 - TNR) by
    r, so up to float rounding, < 1e-15)."""
    assert imbalance_sensitivity(metric, ratio) < 1e-15
    assert imbalance_sensitivity("recall", ratio) == 0.0


@pytest.mark.parametrize("pi0", [0.001, 0.05, 0.5])
@pytest.mark.parametrize("ratio", RATIOS)
def test_calibrated_precision_has_no_sensitivity(pi0: float, ratio: float) -> None:
    """Siblini's calibrated precision (eq. 5) at a fixed pi0 is imbalance agnostic: its
    surfaces at 1:1 and 1:r coincide up to rounding (< 1e-12), while precision's differ."""
    assert imbalance_sensitivity("calibrated_precision", ratio, pi0=pi0) < 1e-12
    assert imbalance_sensitivity("precision", ratio) > 0.1


@pytest.mark.parametrize("ratio", RATIOS)
def test_precision_is_the_most_sensitive_then_f1_accuracy_hss(ratio: float) -> None:
    """Seed 002, Fig. 4: "Precision appears to be the most sensitive one in our list, followed
    by f1 score, accuracy, and hss, respectively"."""
    s = {m: imbalance_sensitivity(m, ratio, pi0=0.5) for m in SURFACE_METRICS}
    assert max(s, key=lambda m: s[m]) == "precision"
    assert s["precision"] > s["f1"] > s["accuracy"] > s["hss"] > 0.0


@pytest.mark.parametrize("metric", ["accuracy", "precision", "f1", "hss"])
def test_sensitivity_grows_with_the_ratio_and_saturates(metric: str) -> None:
    """Seed 002, Fig. 4 and section 3: sensitivity increases with the imbalance ratio, with
    shrinking gains ("higher imbalance ratios are associated with the lower sensitivity").

    Measured per doubling of r: the gain shrinks from 1:4 on for all four metrics; for f1 and hss
    the first doubling gains less than the second, so the growth is log-like, not exactly log.
    """
    ratios = 2.0 ** np.arange(0, 12)
    s = np.array([imbalance_sensitivity(metric, r) for r in ratios])
    assert s[0] == 0.0
    assert np.all(np.diff(s) > 0.0)
    gains = np.diff(s)[2:]
    assert np.all(np.diff(gains) < 0.0)
    assert s[-1] < 1.0


@pytest.mark.parametrize("ratio", [2.0, 49.0, 1000.0])
def test_accuracy_sensitivity_matches_its_closed_form(ratio: float) -> None:
    """Accuracy at 1:r is (TPR + r TNR) / (1 + r); the volume to 1:1 is (r - 1) / (6 (r + 1)),
    and on the cell-centred 100 x 100 lattice exactly that times (1 - 1/100^2)."""
    expected = (ratio - 1.0) / (6.0 * (ratio + 1.0)) * (1.0 - 1e-4)
    assert imbalance_sensitivity("accuracy", ratio) == pytest.approx(expected, rel=1e-12)


def test_precision_sensitivity_at_1_49_matches_scipy_volume() -> None:
    """Seed 002, Fig. 3's ratio 1:49: the lattice volume for precision converges to scipy's
    dblquad of |P_1 - P_49| over the unit square (0.45505): 0.45546 at grid 100, 0.45509 at 400."""
    exact, _ = dblquad(
        lambda tpr, tnr: abs(tpr / (tpr + 1 - tnr) - tpr / (tpr + 49 * (1 - tnr))),
        0,
        1,
        0,
        1,
        epsabs=1e-10,
    )
    assert imbalance_sensitivity("precision", 49, grid=100) == pytest.approx(exact, abs=1e-3)
    assert imbalance_sensitivity("precision", 49, grid=400) == pytest.approx(exact, abs=1e-4)


def test_signed_metrics_are_rescaled_to_the_unit_interval() -> None:
    """Seed 002 section 3 rescales every metric to [0, 1]: tss/hss/youden map -1 -> 0, 1 -> 1;
    Youden's J as printed equals tss on every cell."""
    tnr, tpr = np.array([0.0, 1.0, 0.5]), np.array([0.0, 1.0, 0.5])
    for metric in ("tss", "hss", "youden"):
        values = metric_surface(metric, 1.0, tnr, tpr).values
        assert values == pytest.approx([0.0, 1.0, 0.5])
    grid = contingency_grid(20)
    assert np.allclose(
        metric_surface("youden", 7.0, *grid).values, metric_surface("tss", 7.0, *grid).values
    )


def test_undefined_cells_are_flagged_not_scored() -> None:
    """Precision is 0/0 at TPR = 0, TNR = 1 (nothing predicted positive): that cell is NaN and
    not ``defined``; f1 (count form) and hss are defined there. The cell-centred lattice used
    for the volume has no such cell."""
    tnr, tpr = np.array([1.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0])
    precision = metric_surface("precision", 49.0, tnr, tpr)
    assert precision.defined.tolist() == [False, True, True]
    assert np.isnan(precision.values[0])
    assert precision.values[1:].tolist() == [0.0, 1.0]
    for metric in ("f1", "hss", "accuracy"):
        assert metric_surface(metric, 49.0, tnr, tpr).defined.all()
    for metric in SURFACE_METRICS:
        surface = metric_surface(metric, 49.0, *contingency_grid(50), pi0=0.1)
        assert surface.defined.all()
        assert np.all((surface.values >= 0.0) & (surface.values <= 1.0))


def test_invalid_arguments_are_refused() -> None:
    """Unknown metric, non-positive ratio, missing pi0 and rates outside [0, 1] raise."""
    with pytest.raises(ValueError, match="unknown metric"):
        imbalance_sensitivity("auc", 10.0)
    with pytest.raises(ValueError, match="ratio"):
        imbalance_sensitivity("precision", 0.0)
    with pytest.raises(ValueError, match="pi0"):
        imbalance_sensitivity("calibrated_precision", 10.0)
    with pytest.raises(ValueError, match="grid"):
        imbalance_sensitivity("precision", 10.0, grid=0)
    with pytest.raises(ValueError, match="tpr"):
        metric_surface("precision", 2.0, 0.5, 1.5)
