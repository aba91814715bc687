"""``evaluate`` and ``evaluate_sketch``: one window's metrics, measured and calibrated."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics._kernel import AmountCounts, Budgets, Columns, ReplicateCounts, compute
from app.metrics._validation import check_pi0
from app.metrics.budget import NO_BUDGET, Budget
from app.metrics.registry import METRICS
from app.metrics.sketch import CurveSketch
from app.metrics.sketch_build import build_sketch
from app.metrics.types import FloatingArray

Values = Mapping[str, float | None]


@dataclass(frozen=True, eq=False)
class EvaluationResult:
    """Metrics of one window. Immutable; ``to_dict()`` is the JSON form in docs/interfaces.md.

    ``regular`` and ``calibrated`` map every registry name to a float or ``None``; each ``None``
    has its reason in ``undefined`` under ``"regular.<name>"`` / ``"calibrated.<name>"``.
    """

    n: int
    positives: int
    negatives: int
    pi: float
    pi0: float
    threshold: float
    tp: int
    fp: int
    tn: int
    fn: int
    regular: Values
    calibrated: Values
    undefined: Mapping[str, str]
    sketch: CurveSketch

    @property
    def confusion(self) -> dict[str, int]:
        """Confusion counts at the threshold (stored and served under the key "counts")."""
        return {"tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (no NaN: undefined values are ``None``)."""
        return {
            "n": self.n,
            "positives": self.positives,
            "negatives": self.negatives,
            "pi": self.pi,
            "pi0": self.pi0,
            "threshold": self.threshold,
            "counts": self.confusion,
            "regular": dict(self.regular),
            "calibrated": dict(self.calibrated),
            "undefined": dict(self.undefined),
        }


def evaluate(
    scores: npt.ArrayLike,
    labels: npt.ArrayLike,
    *,
    threshold: float,
    pi0: float,
    budget: Budget = NO_BUDGET,
) -> EvaluationResult:
    """Compute every registry metric of one window, regular and calibrated to ``pi0``.

    A row is predicted positive iff ``score >= threshold``. Average precision is
    scikit-learn's step sum with tied scores forming one threshold. Calibrated metrics follow
    Siblini et al. (2020), eq. 5: ``Prec_c = TP / (TP + k FP)``,
    ``k = pi (1 - pi0) / (pi0 (1 - pi))``. Identical to
    ``evaluate_sketch(build_sketch(scores, labels, threshold=threshold), pi0=pi0)``.

    Raises
    ------
    InvalidInputError
        Bad scores/labels (see :func:`build_sketch`) or ``pi0`` outside (0, 1).

    Examples
    --------
    scikit-learn's own examples (``average_precision_score`` prints 0.83, ``roc_auc_score``
    0.75). At ``pi0`` equal to the window's fraud rate (here 0.5) calibration changes nothing:

    >>> scores, labels = [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]
    >>> result = evaluate(scores, labels, threshold=0.3, pi0=0.5)
    >>> round(result.regular["average_precision"], 4), result.regular["roc_auc"]
    (0.8333, 0.75)
    >>> result.calibrated["average_precision"] == result.regular["average_precision"]
    True

    At ``pi0 = 0.1``, k = 0.5 * 0.9 / (0.1 * 0.5) = 9: the precision at the threshold, TP = 2
    and FP = 1, becomes 2 / (2 + 9) (Siblini et al., eq. 5), and the AP's two steps 1 and
    2 / 11 average to 0.5909:

    >>> tenth = evaluate(scores, labels, threshold=0.3, pi0=0.1)
    >>> tenth.tp, tenth.fp, round(tenth.regular["precision"], 4)
    (2, 1, 0.6667)
    >>> round(tenth.calibrated["precision"], 4), round(tenth.calibrated["average_precision"], 4)
    (0.1818, 0.5909)
    """
    p0 = check_pi0(pi0)  # before the sort: reject cheap mistakes first
    sketch = build_sketch(scores, labels, threshold=threshold)
    return evaluate_sketch(sketch, pi0=p0, budget=budget)


def evaluate_sketch(
    sketch: CurveSketch, *, pi0: float, budget: Budget = NO_BUDGET
) -> EvaluationResult:
    """Recompute a window's metrics from its sketch at any reference prior, in O(entries).

    ``budget`` is the team's (:class:`Budget`): without its share the top-k metrics are
    undefined, without its review cost net savings; without the sketch's amounts, the value
    metrics.
    """
    p0 = check_pi0(pi0)
    columns = compute(counts_of(sketch), p0, budget.kernel())
    return _result(sketch, p0, columns, 0, budget)


def evaluate_sketches(
    sketches: Sequence[CurveSketch],
    *,
    pi0: float,
    budgets: Sequence[Budget] | None = None,
) -> list[EvaluationResult]:
    """``[evaluate_sketch(s, pi0=pi0, budget=b) for s, b in zip(sketches, budgets)]``,
    bit for bit, in one vectorised pass.

    For a series re-evaluated at a new pi0: one evaluation costs ~80 numpy calls on a few hundred
    entries, mostly call overhead, so hundreds of windows share each call instead. Shorter
    sketches are padded with empty entries, which change no count.
    """
    p0 = check_pi0(pi0)
    if not sketches:
        return []
    width = max(s.scores.size for s in sketches)

    def padded(field: str, fill: float) -> FloatingArray:
        out = np.full((len(sketches), width), fill)
        for row, sketch in enumerate(sketches):
            values = getattr(sketch, field)
            out[row, : values.size] = values
        return out

    counts = ReplicateCounts(
        positives_at=padded("positives_at", 0.0),
        negatives_tied=padded("negatives_tied", 0.0),
        negatives_between=padded("negatives_between", 0.0),
        negatives_below=np.array([float(s.negatives_below) for s in sketches]),
        threshold_index=np.array([s.threshold_index for s in sketches], dtype=np.intp),
        scores=padded("scores", -np.inf),
        amounts=_padded_amounts(sketches, width),
        entities=_padded_entities(sketches),
    )
    each = list(budgets) if budgets is not None else [NO_BUDGET] * len(sketches)
    if len(each) != len(sketches):
        raise ValueError(f"{len(each)} budgets for {len(sketches)} sketches")

    def column(values: list[float | None]) -> FloatingArray:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

    budgets_of_rows = Budgets(
        alert_share=column([b.share for b in each]),
        entity_share=column([b.entity_share for b in each]),
        review_cost=column([b.review_cost for b in each]),
    )
    columns = compute(counts, p0, budgets_of_rows)
    return [_result(sketch, p0, columns, row, each[row]) for row, sketch in enumerate(sketches)]


def _padded_entities(sketches: Sequence[CurveSketch]) -> ReplicateCounts | None:
    """The sketches' entity sketches, one row each, padded like the sketches (a sketch without
    one: a row without rows, whose entity metrics are NaN)."""
    if all(s.entities is None for s in sketches):
        return None
    width = max(s.entities.scores.size for s in sketches if s.entities is not None)
    rows = len(sketches)
    counts = np.zeros((3, rows, width))
    scores = np.full((rows, width), -np.inf)
    below = np.zeros(rows)
    index = np.zeros(rows, dtype=np.intp)
    for row, sketch in enumerate(sketches):
        e = sketch.entities
        if e is None:
            continue
        size = e.scores.size
        counts[:, row, :size] = (e.positives_at, e.negatives_tied, e.negatives_between)
        scores[row, :size] = e.scores
        below[row] = e.negatives_below
        index[row] = e.threshold_index
    return ReplicateCounts(
        positives_at=counts[0],
        negatives_tied=counts[1],
        negatives_between=counts[2],
        negatives_below=below,
        threshold_index=index,
        scores=scores,
    )


def _padded_amounts(sketches: Sequence[CurveSketch], width: int) -> AmountCounts | None:
    """The sketches' amounts, one row each (NaN for a sketch without; padding adds 0)."""
    if all(s.amounts is None for s in sketches):
        return None
    positive = np.zeros((len(sketches), width))
    flagged = np.full(len(sketches), np.nan)
    for row, sketch in enumerate(sketches):
        if sketch.amounts is None:
            positive[row] = np.nan
        else:
            positive[row, : sketch.scores.size] = sketch.amounts.positive_at
            flagged[row] = sketch.amounts.negative_flagged
    return AmountCounts(positive_at=positive, negative_flagged=flagged)


def flagged_counts(sketch: CurveSketch) -> tuple[int, int]:
    """The sketch's positives and negatives at or above its threshold (TP, FP)."""
    j = sketch.threshold_index
    tp = int(np.sum(sketch.positives_at[: j + 1]))
    fp = int(np.sum(sketch.negatives_between[: j + 1]) + np.sum(sketch.negatives_tied[: j + 1]))
    return tp, fp


def _result(
    sketch: CurveSketch,
    p0: float,
    columns: tuple[Columns, Columns, FloatingArray],
    row: int,
    budget: Budget,
) -> EvaluationResult:
    """Row ``row`` of :func:`compute`'s columns as the result of ``sketch``."""
    regular_arr, calibrated_arr, pi_arr = columns
    positives, negatives = sketch.positives, sketch.negatives
    tp, fp = flagged_counts(sketch)
    undefined = _settings_reasons(budget)
    undefined.update(_value_reasons(sketch))
    if sketch.entities is None:
        reason = "not every row of the window names an entity"
        undefined.update({f"{v}.entity_precision_at_k": reason for v in _BOTH})
    undefined.update(
        (key, reason)
        for key, reason in _undefined_reasons(positives, negatives, tp, fp).items()
        if key not in undefined
    )
    regular = {
        spec.name: _value(regular_arr, spec.name, undefined, "regular", row) for spec in METRICS
    }
    calibrated = {
        spec.name: _value(calibrated_arr, spec.name, undefined, "calibrated", row)
        for spec in METRICS
    }
    return EvaluationResult(
        n=sketch.n,
        positives=positives,
        negatives=negatives,
        pi=float(pi_arr[row]),
        pi0=p0,
        threshold=sketch.threshold,
        tp=tp,
        fp=fp,
        tn=negatives - fp,
        fn=positives - tp,
        regular=MappingProxyType(regular),
        calibrated=MappingProxyType(calibrated),
        undefined=MappingProxyType(undefined),
        sketch=sketch,
    )


def counts_of(sketch: CurveSketch) -> ReplicateCounts:
    """The sketch's exact counts as a one-replicate :class:`ReplicateCounts`."""
    amounts = None
    if sketch.amounts is not None:
        amounts = AmountCounts(
            positive_at=sketch.amounts.positive_at[None, :],
            negative_flagged=np.array([sketch.amounts.negative_flagged]),
        )
    return ReplicateCounts(
        positives_at=sketch.positives_at.astype(np.float64)[None, :],
        negatives_tied=sketch.negatives_tied.astype(np.float64)[None, :],
        negatives_between=sketch.negatives_between.astype(np.float64)[None, :],
        negatives_below=np.array([float(sketch.negatives_below)]),
        threshold_index=sketch.threshold_index,
        scores=sketch.scores,
        amounts=amounts,
        entities=counts_of(sketch.entities) if sketch.entities is not None else None,
    )


def _value(
    columns: Mapping[str, npt.NDArray[np.floating[Any]]],
    name: str,
    undefined: Mapping[str, str],
    variant: str,
    row: int = 0,
) -> float | None:
    if f"{variant}.{name}" in undefined:
        return None
    value = float(columns[name][row])
    if not math.isfinite(value):  # a guard: the reasons below must cover every NaN
        raise AssertionError(f"{variant}.{name} is {value} but has no undefined reason")
    return value


_NEEDS_POSITIVES = (
    "recall",
    "f1",
    "average_precision",
    "roc_auc",
    "pr_gain_auc",
    "best_f1",
    "best_f1_threshold",
    "lr_plus",
    "lr_minus",
)
_NEEDS_NEGATIVES = ("fpr", "roc_auc", "pr_gain_auc", "lr_plus", "lr_minus")


_NEEDS_BUDGET = ("precision_at_k", "precision_at_k_max")
_NEEDS_AMOUNTS = ("value_recall", "value_precision", "net_savings")
_BOTH = ("regular", "calibrated")


def _settings_reasons(budget: Budget) -> dict[str, str]:
    """The metrics a model's missing settings leave undefined, both variants."""
    reasons = {}
    no_capacity = "the model has no alert_capacity (its alert budget)"
    if budget.share is None:
        reasons.update({f"{v}.{name}": no_capacity for name in _NEEDS_BUDGET for v in _BOTH})
    if budget.entity_share is None:
        reason = no_capacity if budget.share is None else "the budget has no share of entities"
        reasons.update({f"{v}.entity_precision_at_k": reason for v in _BOTH})
    if budget.review_cost is None:
        reason = "the model has no review_cost (the cost of checking one alert)"
        reasons.update({f"{v}.net_savings": reason for v in _BOTH})
    return reasons


def _value_reasons(sketch: CurveSketch) -> dict[str, str]:
    """Why a value metric is undefined: no amounts, or no amount to divide by."""
    amounts = sketch.amounts
    if amounts is None:
        reason = "not every row of the window carries an amount"
        return {f"{v}.{name}": reason for name in _NEEDS_AMOUNTS for v in _BOTH}
    reasons = {}
    if not amounts.positive_at.max(initial=0.0) > 0.0:
        reason = "the window's positives carry no amount (none, or all of amount 0)"
        reasons.update({f"{v}.value_recall": reason for v in _BOTH})
    caught = amounts.positive_at[: sketch.threshold_index + 1].max(initial=0.0)
    if not (caught > 0.0 or amounts.negative_flagged > 0.0):
        reason = "no amount at or above the threshold"
        reasons.update({f"{v}.value_precision": reason for v in _BOTH})
    return reasons


def _undefined_reasons(positives: int, negatives: int, tp: int, fp: int) -> dict[str, str]:
    """Why each undefined metric is undefined, decided from the counts alone."""
    reasons: dict[str, str] = {}

    def mark(names: tuple[str, ...], reason: str, variants: tuple[str, ...]) -> None:
        for name in names:
            for variant in variants:
                reasons.setdefault(f"{variant}.{name}", reason)

    both = ("regular", "calibrated")
    if positives == 0:
        mark(_NEEDS_POSITIVES, "no positives in the window", both)
    if negatives == 0:
        mark(_NEEDS_NEGATIVES, "no negatives in the window", both)
    if positives == 0 or negatives == 0:
        # k = pi(1-pi0)/(pi0(1-pi)) needs 0 < pi < 1.
        prior_dependent = tuple(s.name for s in METRICS if not s.prior_invariant)
        mark(prior_dependent, "calibration needs both classes in the window", ("calibrated",))
    if tp + fp == 0:
        mark(("precision",), "nothing predicted positive (no score >= threshold)", both)
    if negatives > 0 and fp == 0:
        mark(("lr_plus",), "false positive rate is 0 at the threshold", both)
    if negatives > 0 and fp == negatives:
        mark(("lr_minus",), "true negative rate is 0 at the threshold", both)
    return reasons
