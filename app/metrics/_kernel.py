"""Every metric from sketch counts, vectorised over a leading replicate axis.

``evaluate_sketch`` calls this with one row (exact counts) and ``bootstrap`` with one row per
replicate (resampled counts), so the point estimates and their intervals share one formula.
Cells where a metric is undefined come out NaN; the public layer turns them into ``None`` plus a
reason decided from the counts, never from the NaN itself.

Notation: ``tp[r, j]``/``fp[r, j]`` are positives/negatives scored ``>= scores[j]`` (row ``r``);
a metric's calibrated variant replaces the false-positive weight 1 by
``k = pi (1 - pi0) / (pi0 (1 - pi))`` (Siblini et al. 2020, eq. 5) and the prior of the gain
metrics by pi0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.metrics._validation import FloatArray

Columns = dict[str, FloatArray]


@dataclass(frozen=True)
class Counts:
    """Per-replicate counts at each sketch entry (shape ``(R, E)``) and class totals ``(R,)``."""

    positives_at: FloatArray
    negatives_tied: FloatArray
    negatives_between: FloatArray
    negatives_below: FloatArray
    threshold_index: int
    scores: FloatArray  # (E,) entry scores, descending


@dataclass(frozen=True)
class _Curve:
    """Cumulative counts ``(R, E)`` and totals ``(R,)`` derived once from :class:`Counts`."""

    tp: FloatArray
    fp: FloatArray
    pos: FloatArray
    tied: FloatArray
    npos: FloatArray
    nneg: FloatArray
    tp_t: FloatArray
    fp_t: FloatArray
    scores: FloatArray


def compute(counts: Counts, pi0: float) -> tuple[Columns, Columns, FloatArray]:
    """Return ``(regular, calibrated, pi)``: metric name -> values ``(R,)``, NaN if undefined."""
    tp = np.cumsum(counts.positives_at, axis=1)
    fp = np.cumsum(counts.negatives_between + counts.negatives_tied, axis=1)
    j = counts.threshold_index
    c = _Curve(
        tp=tp,
        fp=fp,
        pos=counts.positives_at,
        tied=counts.negatives_tied,
        npos=tp[:, -1],
        nneg=fp[:, -1] + counts.negatives_below,
        tp_t=tp[:, j],
        fp_t=fp[:, j],
        scores=counts.scores,
    )
    pi = c.npos / (c.npos + c.nneg)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # k == 1.0 exactly when pi0 == pi: both products then multiply the same two floats.
        k = (pi * (1.0 - pi0)) / (pi0 * (1.0 - pi))
        invariant = _invariant(c)
        regular = _prior_dependent(c, None, pi[:, None])
        calibrated = _prior_dependent(c, k, pi0)
    regular.update(invariant)
    calibrated.update(invariant)
    return regular, calibrated, pi


def _invariant(c: _Curve) -> Columns:
    recall = c.tp_t / c.npos
    fpr = c.fp_t / c.nneg
    # Mann-Whitney: each positive beats the negatives below its score, half of those tied.
    wins = np.sum(c.pos * (c.nneg[:, None] - c.fp + 0.5 * c.tied), axis=1)
    return {
        "recall": recall,
        "fpr": fpr,
        "roc_auc": wins / (c.npos * c.nneg),
        "lr_plus": recall / fpr,
        "lr_minus": ((c.npos - c.tp_t) / c.npos) / ((c.nneg - c.fp_t) / c.nneg),
    }


def _prior_dependent(c: _Curve, k: FloatArray | None, prior: FloatArray | float) -> Columns:
    """Precision-type metrics with false positives weighted by ``k`` (``None``: weight 1)."""
    tp, pos = c.tp, c.pos
    wfp = c.fp if k is None else c.fp * k[:, None]
    wfp_t = c.fp_t if k is None else c.fp_t * k
    # sklearn's AP: recall steps (positives of the group / all positives) times the precision
    # with the whole tie group counted; entries without positives add nothing.
    ap = np.sum(np.where(pos > 0, pos * (tp / (tp + wfp)), 0.0), axis=1) / c.npos
    # Entries without positives never beat the group above them, and argmax takes the first
    # (highest-threshold) maximum.
    f1_curve = np.where(pos > 0, 2.0 * tp / (tp + wfp + c.npos[:, None]), -1.0)
    best = np.argmax(f1_curve, axis=1)
    best_f1 = np.take_along_axis(f1_curve, best[:, None], axis=1)[:, 0]
    defined = c.npos > 0
    return {
        "precision": c.tp_t / (c.tp_t + wfp_t),
        "f1": 2.0 * c.tp_t / (c.tp_t + wfp_t + c.npos),
        "average_precision": ap,
        "pr_gain_auc": _pr_gain_area(c, prior),
        "best_f1": np.where(defined, best_f1, np.nan),
        "best_f1_threshold": np.where(defined, c.scores[best], np.nan),
    }


def _pr_gain_area(c: _Curve, prior: FloatArray | float) -> FloatArray:
    """Area under the PR-Gain curve over recall gain in [0, 1] (Flach & Kull 2015).

    Follows the reference implementation (meeliskull/prg, ``calc_auprg``): one point per
    distinct score, trapezoids in (recall gain, precision gain) space for every segment whose
    left end has recall gain >= 0, and the segment crossing recall gain 0 cut at the point
    interpolated linearly in contingency space. Negative precision gains count (negative area).
    Precision gain ``1 - (P/N)(FP/TP)`` is the same calibrated or not; recall gain
    ``(rec - prior) / ((1 - prior) rec)`` uses the prior (pi, or pi0 when calibrated).
    ``prior`` is a float or an ``(R, 1)`` column.
    """
    tp, fp = c.tp, c.fp
    npos_c, ratio = c.npos[:, None], (c.npos / c.nneg)[:, None]
    tp_l, fp_l = tp - c.pos, fp - c.tied

    def recall_gain(t: FloatArray) -> FloatArray:
        rec = t / npos_c
        result: FloatArray = (rec - prior) / ((1.0 - prior) * rec)
        return result

    def precision_gain(t: FloatArray, f: FloatArray) -> FloatArray:
        result: FloatArray = 1.0 - ratio * (f / t)
        return result

    rg_l, rg_r = recall_gain(tp_l), recall_gain(tp)
    pg_l, pg_r = precision_gain(tp_l, fp_l), precision_gain(tp, fp)
    whole = (tp_l > 0) & (rg_l >= 0)
    crossing = ~whole & (rg_r > 0)
    tp_x = prior * npos_c
    fp_x = fp_l + (tp_x - tp_l) / c.pos * c.tied
    pg_x = precision_gain(tp_x, fp_x)
    area = np.where(whole, (rg_r - rg_l) * (pg_r + pg_l) / 2.0, 0.0)
    area = area + np.where(crossing, rg_r * (pg_r + pg_x) / 2.0, 0.0)
    result: FloatArray = np.sum(area, axis=1)
    return result
