"""Siblini, Fréry, He-Guelton, Oblé, Wang: "Master your Metrics with Calibration" (IDA 2020).

Numbers and claims of the paper reproduced on its own synthetic setup (section 3.2).
"""

from __future__ import annotations

import numpy as np
import pytest

from app.metrics import evaluate
from tests.support.synthetic import siblini_window

FIG4_PIS = (0.5, 0.1, 0.01, 0.001)


def _fig4_means(pi: float) -> dict[str, float]:
    runs = []
    for seed in range(5):
        rng = np.random.default_rng([2020, seed, int(pi * 1e5)])
        scores, labels = siblini_window(10**6, pi, mu1=2.0, mu0=1.8, rng=rng)
        result = evaluate(scores, labels, threshold=1.9, pi0=0.5)
        runs.append(
            [
                result.regular["average_precision"],
                result.calibrated["average_precision"],
                result.regular["best_f1"],
                result.calibrated["best_f1"],
            ]
        )
    mean = np.mean(np.array(runs, dtype=np.float64), axis=0)
    return dict(zip(("ap", "ap_c", "f1", "f1_c"), mean.tolist(), strict=True))


def test_figure_4_calibrated_metrics_do_not_follow_the_prior() -> None:
    """Siblini et al. 2020, Fig. 4 (IDA version, section 3.2).

    Setup of the figure: labels ~ Bernoulli(pi), feature ~ N(2, 1) for positives and N(1.8, 1)
    for negatives, 10^6 points, the optimal (likelihood-ratio) model, pi from 0.5 down to 0.001,
    pi0 = 0.5; means over runs (5 seeded runs here, 30 in the paper). The paper prints no table,
    only the curves: regular AUC-PR and F1 collapse as pi falls while the calibrated ones stay
    flat. Measured here (mean of 5): AP 0.549 at pi = 0.5 -> 0.0013 at pi = 0.001 (over 400-fold),
    best F1 0.667 -> 0.0040; calibrated AP 0.548 -> 0.553 (+0.9%), calibrated best F1 0.6667 ->
    0.6671.
    """
    means = {pi: _fig4_means(pi) for pi in FIG4_PIS}
    balanced = means[0.5]
    # With pi = pi0 = 0.5 the two variants coincide up to the sampling of pi itself.
    assert balanced["ap_c"] == pytest.approx(balanced["ap"], rel=0.01)
    for pi in FIG4_PIS[1:]:
        m = means[pi]
        # "Several-fold" for pi <= 0.1; a collapse by orders of magnitude at pi = 0.001.
        assert m["ap"] < balanced["ap"] / 4.0
        assert m["f1"] < balanced["f1"] / 3.0
        assert m["ap_c"] == pytest.approx(balanced["ap_c"], rel=0.02)
        assert m["f1_c"] == pytest.approx(balanced["f1_c"], rel=0.02)
    assert means[0.001]["ap"] < balanced["ap"] / 100.0


@pytest.mark.parametrize(("pi", "pi0"), [(0.1, 0.02), (0.02, 0.1)])
def test_appendix_b_closed_form_equals_random_undersampling(pi: float, pi0: float) -> None:
    """Siblini et al. 2020, Appendix B, Proposition 1 and Fig. 8.

    The heuristic of Jeni et al. (2013) undersamples the test set to the target ratio pi0 (the
    positives when pi0 < pi, the negatives when pi0 > pi) and averages the regular metric over
    runs; the paper shows the closed-form calibrated AP gives the same value. Here: a synthetic
    window (n = 20,000, N(2,1) vs N(0,1)), 200 undersampling runs. Measured: mean of the runs
    minus the closed form = +0.15 standard errors (pi0 < pi) and -1.4 standard errors (pi0 > pi).
    The bound is 2 standard errors: a fixed 1-se band would exclude an exact identity a third of
    the time.
    """
    scores, labels = siblini_window(20_000, pi, mu1=2.0, mu0=0.0, rng=np.random.default_rng(5))
    closed_form = evaluate(scores, labels, threshold=1.0, pi0=pi0).calibrated["average_precision"]
    assert closed_form is not None
    positives, negatives = np.flatnonzero(labels), np.flatnonzero(~labels)
    rng = np.random.default_rng(11)
    runs = []
    for _ in range(200):
        if pi0 < pi:  # keep every negative, sample positives down to the ratio pi0
            keep_pos = rng.choice(positives, round(pi0 * negatives.size / (1 - pi0)), replace=False)
            keep = np.concatenate((keep_pos, negatives))
        else:  # keep every positive, sample negatives
            size = round(positives.size * (1 - pi0) / pi0)
            keep = np.concatenate((positives, rng.choice(negatives, size, replace=False)))
        value = evaluate(scores[keep], labels[keep], threshold=1.0, pi0=0.5).regular
        runs.append(value["average_precision"])
    values = np.array(runs, dtype=np.float64)
    standard_error = values.std(ddof=1) / np.sqrt(values.size)
    assert abs(values.mean() - closed_form) <= 2.0 * standard_error
    # And the heuristic really moved the metric: calibration is not a no-op here.
    regular = evaluate(scores, labels, threshold=1.0, pi0=pi0).regular["average_precision"]
    assert regular is not None
    assert abs(regular - closed_form) > 20.0 * standard_error
