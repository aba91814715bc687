"""Precision among the k highest-scored rows computed directly (the alert-budget tests'
independent reference)."""

from __future__ import annotations

import itertools

import numpy as np

from app.metrics.types import Float64Array, Int64Array


def top_k_precision(scores: Float64Array, labels: Int64Array, k: int) -> float:
    """Mean precision of the k first rows over every order of the tied rows (brute force for
    small tie groups, the tie group's positive share otherwise)."""
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    k = min(k, s.size)
    kth = s[k - 1]
    above = y[s > kth]
    tied = y[s == kth]
    need = k - above.size
    if tied.size <= 7:
        picks = [sum(c) for c in itertools.combinations(tied.tolist(), need)]
        caught = above.sum() + float(np.mean(picks))
    else:
        caught = above.sum() + need * tied.mean()
    return float(caught / k)
