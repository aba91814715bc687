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

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from app.metrics._budget_kernel import (
    TINY,
    AmountValues,
    alerts,
    budget_columns,
    precision_at_k,
    top_rows,
)
from app.metrics._gain_curve import GainArea
from app.metrics.types import FloatingArray

# FloatingArray: float64 for point values, float32 for bootstrap replicates (one formula).
Columns = dict[str, FloatingArray]
_GRID_CELLS = 1 << 20
"""Priors x replicate rows x entries a call of :meth:`Prepared.calibrated_grid`'s budget
columns takes (its largest arrays 4 MB in float32)."""


@dataclass(frozen=True)
class AmountCounts:
    """Per-replicate amounts: the positives' at each entry ``(R, E)`` and the negatives' at or
    above the threshold ``(R,)``. A row of NaN: a window without amounts."""

    positive_at: FloatingArray
    negative_flagged: FloatingArray


@dataclass(frozen=True)
class ReplicateCounts:
    """Per-replicate counts at each sketch entry (shape ``(R, E)``) and class totals ``(R,)``."""

    positives_at: FloatingArray
    negatives_tied: FloatingArray
    negatives_between: FloatingArray
    negatives_below: FloatingArray
    threshold_index: int | npt.NDArray[np.intp]  # one for all rows, or one per row
    scores: FloatingArray  # (E,) entry scores, descending, or (R, E): one sketch per row
    amounts: AmountCounts | None = None  # None: no row has amounts (value metrics NaN)
    entities: ReplicateCounts | None = None  # the entity sketch's counts (None: no entities)


@dataclass(frozen=True)
class Budgets:
    """The team's budget for each row of a batch (a float for all, NaN or None: none):
    the share of the rows and of the entities it can check, and the cost of one check."""

    alert_share: FloatingArray | float | None = None
    entity_share: FloatingArray | float | None = None
    review_cost: FloatingArray | float | None = None


def _per_row(value: FloatingArray | float | None, like: FloatingArray) -> FloatingArray | None:
    """A budget value as one value per row (None stays None)."""
    if value is None:
        return None
    return np.broadcast_to(np.asarray(value, dtype=like.dtype), like.shape)


@dataclass(frozen=True)
class _Curve:
    """Cumulative counts ``(R, E)`` and totals ``(R,)``, derived once from ReplicateCounts."""

    tp: FloatingArray
    tp2: FloatingArray  # tp + tp, for every prior's F1 curve
    fp: FloatingArray
    pos: FloatingArray
    tied: FloatingArray
    npos: FloatingArray
    nneg: FloatingArray
    tp_t: FloatingArray
    fp_t: FloatingArray
    scores: FloatingArray
    rows: npt.NDArray[np.intp]  # arange(R), for picking one entry per row
    sequential: bool  # row sums strictly left to right (see _rowdot)

    @cached_property
    def by_entry(self) -> tuple[FloatingArray, FloatingArray]:
        """``fp`` and ``tp`` entries first, ``(E, R)`` (precision at k's layout)."""
        return np.ascontiguousarray(self.fp.T), np.ascontiguousarray(self.tp.T)

    @classmethod
    def of(cls, counts: ReplicateCounts, sequential: bool) -> _Curve:
        tp = np.cumsum(counts.positives_at, axis=1)
        fp = np.cumsum(counts.negatives_between + counts.negatives_tied, axis=1)
        j = counts.threshold_index
        rows = np.arange(tp.shape[0])
        return cls(
            tp=tp,
            tp2=tp + tp,
            fp=fp,
            pos=counts.positives_at,
            tied=counts.negatives_tied,
            npos=tp[:, -1],
            nneg=fp[:, -1] + counts.negatives_below,
            tp_t=tp[rows, j],
            fp_t=fp[rows, j],
            scores=counts.scores,
            rows=rows,
            sequential=sequential,
        )


def compute(
    counts: ReplicateCounts, pi0: float, budgets: Budgets | None = None
) -> tuple[Columns, Columns, FloatingArray]:
    """Return ``(regular, calibrated, pi)``: metric name -> values ``(R,)``, NaN if undefined.

    ``budgets.alert_share`` is the share of each row's population the team can check (its
    alert budget over its rows): the top-k metrics are taken at it, and are NaN without it;
    ``entity_share`` likewise for the entity top k; ``review_cost`` is what checking one alert
    costs: net savings are NaN without it.
    """
    prepared = Prepared.of(counts, budgets=budgets)
    regular = prepared.regular()
    calibrated = prepared.calibrated(pi0)
    calibrated.update(prepared.invariant)
    return regular, calibrated, prepared.pi


@dataclass(frozen=True)
class Prepared:
    """The prior-free part of :func:`compute`, shared when calibrating at several priors."""

    curve: _Curve
    gains: GainArea
    pi: FloatingArray
    invariant: Columns
    values: AmountValues
    alert_share: FloatingArray | None = None
    """Share of the rows in the alert budget, per row (None: no budget, top-k metrics NaN)."""
    entities: _Curve | None = None
    """The entity sketch's curve (None: no entities, the entity top k NaN)."""
    entity_share: FloatingArray | None = None
    entity_scale: FloatingArray | None = None
    """Per row, how far its entities' fraud odds moved from the window's over how far its
    rows' did (None: not drawn apart, the rows' calibration weight serves both)."""

    @classmethod
    def of(
        cls,
        counts: ReplicateCounts,
        *,
        sequential: bool = True,
        budgets: Budgets | None = None,
        entity_odds: float | None = None,
    ) -> Prepared:
        """Cumulate the counts once.

        ``sequential=False`` lets row sums run in numpy's faster pairwise order: for bootstrap
        replicates, whose floats need not match any other evaluation's bit for bit.

        ``entity_odds``: the window's :func:`entity_odds`, for replicates whose entity sketch
        was drawn apart from their rows (the bootstrap). A replicate's calibration weight
        ``k`` comes from its rows' fraud odds; its entities stand for a window whose rows' odds
        moved as the entities' did, so card precision is calibrated with ``k`` scaled by the
        ratio of the two moves (for one window evaluated as it is, the scale is 1).
        """
        spend = budgets or Budgets()
        valued = ValueCurve.of(counts, sequential=sequential, review_cost=spend.review_cost)
        c, pi, values = valued.curve, valued.pi, valued.values
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            share = _per_row(spend.alert_share, pi)
            entities, scale = None, None
            if counts.entities is not None:
                entities = _Curve.of(counts.entities, sequential)
                if entity_odds is not None:
                    moved = (entities.npos * c.nneg) / (entities.nneg * c.npos)
                    scale = moved / entity_odds
            invariant = _invariant(c)
            invariant["value_recall"] = values.recall()
            return cls(
                curve=c,
                gains=GainArea.of(c),
                pi=pi,
                invariant=invariant,
                values=values,
                alert_share=share,
                entities=entities,
                entity_share=_per_row(spend.entity_share, pi),
                entity_scale=scale,
            )

    def regular(self) -> Columns:
        """Every metric at the rows' own priors."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = _prior_dependent(self.curve, None, self.gains.area(self.curve, self.pi))
            out.update(self._budgeted(None))
        out.update(self.invariant)
        return out

    def calibrated(self, pi0: FloatingArray | float) -> Columns:
        """The prior-dependent metrics calibrated to ``pi0`` (a float, or one value per row).

        The prior-invariant metrics are left out: their calibrated value is :attr:`invariant`.
        """
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._calibrated(pi0, self.gains.area(self.curve, pi0))

    def calibrated_grid(self, priors: Sequence[float]) -> list[Columns]:
        """:meth:`calibrated` at each of ``priors`` (a bootstrap's prior grid), the same floats,
        the PR-Gain areas of every prior in one pass (:meth:`GainArea.areas`), and the budget,
        value and entity columns of up to :data:`_GRID_CELLS` cells' priors a call: their
        formulas are elementwise in the weight ``k`` (app/metrics/_budget_kernel.py), and at a
        bootstrap chunk of 1,000 replicates of ten to fifty entries, one call a prior was
        mostly the calls' own cost (a part of ten entries, the grid's 17 priors: 2.6 ms in 17
        calls, 0.9 ms in one). The curve metrics stay one call a prior: their
        ``(priors, replicates, entries)`` buffers cost more than the calls they would save."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            areas = self.gains.areas(self.curve, priors)
            weights = [self._weight(p) for p in priors]
            step = max(1, _GRID_CELLS // max(self.curve.tp.size, 1))
            out: list[Columns] = []
            for start in range(0, len(priors), step):
                ks = weights[start : start + step]
                budgeted = self._budgeted(np.stack(ks))
                for g, (k, area) in enumerate(zip(ks, areas[start : start + step], strict=True)):
                    columns = _prior_dependent(self.curve, k, area)
                    columns.update({name: column[g] for name, column in budgeted.items()})
                    out.append(columns)
            return out

    def _calibrated(self, pi0: FloatingArray | float, pr_gain_auc: FloatingArray) -> Columns:
        k = self._weight(pi0)
        out = _prior_dependent(self.curve, k, pr_gain_auc)
        out.update(self._budgeted(k))
        return out

    def _budgeted(self, k: FloatingArray | None) -> Columns:
        """The alert-budget, value and card precision columns with false positives weighted by
        ``k`` (``None``: weight 1; one per row ``(R,)``, or per prior and row ``(G, R)``)."""
        out = budget_columns(self.curve, k, self.alert_share)
        out.update(self.values.at(self.curve, k, out["alerts"]))
        out["entity_precision_at_k"] = self._entity_top(k)
        return out

    def _weight(self, pi0: FloatingArray | float) -> FloatingArray:
        """The false positives' weight ``k`` calibrating each row to ``pi0``."""
        return calibration_weight(self.pi, pi0)

    def _entity_top(self, k: FloatingArray | None) -> FloatingArray:
        """Precision at k over entities (the handbook's card precision), with legitimate
        entities weighted by the rows' ``k``: a fraud entity's rows are frauds, so weighting
        fraud rows by a and legitimate rows by b weights the entities the same way."""
        if self.entities is None or self.entity_share is None:
            return np.full(self.pi.shape if k is None else k.shape, np.nan, dtype=self.pi.dtype)
        if k is not None and self.entity_scale is not None:
            k = k * self.entity_scale
        return precision_at_k(self.entities, k, top_rows(self.entities, k, self.entity_share))


def calibration_weight(pi: FloatingArray, pi0: FloatingArray | float) -> FloatingArray:
    """The false positives' weight ``k`` calibrating rows of prior ``pi`` to ``pi0``."""
    # k == 1.0 exactly when pi0 == pi: both products then multiply the same two floats.
    k: FloatingArray = (pi * (1.0 - pi0)) / (pi0 * (1.0 - pi))
    return k


@dataclass(frozen=True)
class ValueCurve:
    """The part of :class:`Prepared` the value metrics read: the curve, each row's prior and
    its amounts at the threshold. The card bootstrap's replicates (two-entry sketches) need
    nothing else, and the rest of :meth:`Prepared.of` (the PR-Gain areas, the prior-free
    metrics) was two thirds of their preparation."""

    curve: _Curve
    pi: FloatingArray
    values: AmountValues

    @classmethod
    def of(
        cls,
        counts: ReplicateCounts,
        *,
        sequential: bool,
        review_cost: FloatingArray | float | None,
    ) -> ValueCurve:
        c = _Curve.of(counts, sequential)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            pi = c.npos / (c.npos + c.nneg)  # a replicate may draw no rows at all
            values = AmountValues.of(c, counts.amounts, counts.threshold_index, review_cost)
        return cls(curve=c, pi=pi, values=values)

    def metrics(self, pi0: FloatingArray | float | None) -> Columns:
        """``value_precision`` and ``net_savings`` at the rows' own priors (``None``) or
        calibrated to ``pi0``: what :meth:`Prepared.regular` and :meth:`Prepared.calibrated`
        give for them, the same floats."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            k = None if pi0 is None else calibration_weight(self.pi, pi0)
            return self.values.at(self.curve, k, alerts(self.curve, k))


def entity_odds(counts: ReplicateCounts) -> float | None:
    """A window's fraud odds among its entities over its fraud odds among its rows (one-row
    exact ``counts``); None without entities, or where either odds is 0 or undefined."""
    if counts.entities is None:
        return None
    rows, entities = _Curve.of(counts, True), _Curve.of(counts.entities, True)
    with np.errstate(divide="ignore", invalid="ignore"):
        odds = float((entities.npos[0] * rows.nneg[0]) / (entities.nneg[0] * rows.npos[0]))
    return odds if math.isfinite(odds) and odds > 0.0 else None


def _invariant(c: _Curve) -> Columns:
    recall = c.tp_t / c.npos
    fpr = c.fp_t / c.nneg
    # Mann-Whitney: each positive beats the negatives below its score, half of those tied:
    # sum of pos * (N - FP + tied / 2), with the row products done by einsum (no temporaries).
    wins = c.npos * c.nneg - _rowdot(c, c.pos, c.fp) + 0.5 * _rowdot(c, c.pos, c.tied)
    return {
        "recall": recall,
        "fpr": fpr,
        "roc_auc": wins / (c.npos * c.nneg),
        "lr_plus": recall / fpr,
        "lr_minus": ((c.npos - c.tp_t) / c.npos) / ((c.nneg - c.fp_t) / c.nneg),
    }


def _rowdot(c: _Curve, a: FloatingArray, b: FloatingArray) -> FloatingArray:
    """Row sums of ``a * b``: strictly left to right unless ``c.sequential`` is False.

    A sequential sum gives a row the same floats whether it is evaluated alone, in a batch of
    sketches of other lengths, or padded with empty entries (einsum's unrolled sums do not), so
    a series re-evaluated in one batch equals its windows evaluated one by one, bit for bit.
    Bootstrap replicates need no such guarantee, and einsum is three times faster there.
    """
    if not c.sequential:
        fast: FloatingArray = np.einsum("ij,ij->i", a, b)
        return fast
    result: FloatingArray = np.cumsum(a * b, axis=1)[:, -1]
    return result


def _pick(
    scores: FloatingArray, rows: npt.NDArray[np.intp], index: npt.NDArray[np.intp]
) -> FloatingArray:
    """The entry score at ``index`` of each row (scores shared by all rows, or one row each)."""
    picked: FloatingArray = scores[index] if scores.ndim == 1 else scores[rows, index]
    return picked


def _prior_dependent(c: _Curve, k: FloatingArray | None, pr_gain_auc: FloatingArray) -> Columns:
    """Precision-type metrics with false positives weighted by ``k`` (``None``: weight 1)."""
    tp = c.tp
    wfp_t = c.fp_t if k is None else c.fp_t * k
    # The (R, E) steps write into two buffers of their own: a fresh array of a replicate batch's
    # size is a fresh mapping from the system, paid again at every prior. Each step is the same
    # operation on the same values as the expression it replaces: the same floats.
    predicted = c.fp.copy() if k is None else np.multiply(c.fp, k[:, None])
    predicted += tp
    # sklearn's AP: recall steps (positives of the group / all positives) times the precision
    # with the whole tie group counted. An entry above every positive has 0/0 precision but
    # adds no recall; the floor on the denominator turns its term into 0 instead of NaN.
    share = np.maximum(predicted, TINY)
    np.divide(tp, share, out=share)
    ap = _rowdot(c, c.pos, share) / c.npos
    # An entry without positives has the TP of the entry above and at least its FP, so it never
    # beats it, and argmax takes the first (highest-threshold) maximum.
    f1_curve = np.add(predicted, c.npos[:, None], out=predicted)
    np.divide(c.tp2, f1_curve, out=f1_curve)
    best = np.argmax(f1_curve, axis=1)
    best_f1 = f1_curve[c.rows, best]
    defined = c.npos > 0
    return {
        "precision": c.tp_t / (c.tp_t + wfp_t),
        "f1": 2.0 * c.tp_t / (c.tp_t + wfp_t + c.npos),
        "average_precision": ap,
        "pr_gain_auc": pr_gain_auc,
        "best_f1": np.where(defined, best_f1, np.nan),
        "best_f1_threshold": np.where(defined, _pick(c.scores, c.rows, best), np.nan),
    }
