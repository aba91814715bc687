"""Synthetic windows of Siblini et al. (2020), section 3.2: Gaussian class-conditional scores.

Labels are Bernoulli(pi); a row's feature is drawn from N(mu1, 1) if positive and N(mu0, 1) if
negative (their eq. 7; the IDA version's Fig. 4 uses mu1 = 2, mu0 = 1.8). The optimal model of
their eq. 1 scores by the likelihood ratio, which is increasing in the feature when mu1 > mu0, so
the feature itself is returned as the score: every threshold-sweeping metric is the optimal
model's. Population values (infinite window) come from numerical integration.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, stats

from app.metrics.types import BoolArray, Float64Array


def siblini_window(
    n: int, pi: float, mu1: float, mu0: float, rng: np.random.Generator
) -> tuple[Float64Array, BoolArray]:
    """Draw one window of ``n`` rows: ``(scores, labels)`` with labels ~ Bernoulli(pi)."""
    labels = rng.random(n) < pi
    scores = rng.standard_normal(n)
    scores += np.where(labels, mu1, mu0)
    return scores, labels


def population_average_precision(pi: float, mu1: float, mu0: float) -> float:
    """Average precision of an infinite window at positive ratio ``pi``.

    AP = E over positives of the precision at their own score:
    integral of pi T(t) / (pi T(t) + (1 - pi) F(t)) dN(t; mu1, 1), with T and F the survival
    functions of the positive and negative scores. Also the calibrated AP at pi0 = ``pi`` of any
    window drawn with the same means (calibration only changes the prior in this formula).
    """

    def integrand(t: float) -> float:
        tpr = stats.norm.sf(t - mu1)
        fpr = stats.norm.sf(t - mu0)
        precision = pi * tpr / (pi * tpr + (1.0 - pi) * fpr)
        return float(precision * stats.norm.pdf(t - mu1))

    value, _ = integrate.quad(integrand, mu1 - 12.0, mu1 + 12.0, limit=200, epsabs=1e-12)
    return float(value)


def population_roc_auc(mu1: float, mu0: float) -> float:
    """ROC AUC of an infinite window: P(positive score > negative score)."""
    return float(stats.norm.cdf((mu1 - mu0) / math.sqrt(2.0)))
