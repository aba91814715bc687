"""``evaluate`` and ``evaluate_sketch``: one window's metrics, measured and calibrated."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics._kernel import Columns, ReplicateCounts, compute
from app.metrics._validation import check_pi0
from app.metrics.registry import METRICS
from app.metrics.sketch import CurveSketch, build_sketch
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
    alert_share: float | None = None,
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
    """
    p0 = check_pi0(pi0)  # before the sort: reject cheap mistakes first
    sketch = build_sketch(scores, labels, threshold=threshold)
    return evaluate_sketch(sketch, pi0=p0, alert_share=alert_share)


def evaluate_sketch(
    sketch: CurveSketch, *, pi0: float, alert_share: float | None = None
) -> EvaluationResult:
    """Recompute a window's metrics from its sketch at any reference prior, in O(entries).

    ``alert_share`` is the share of the window's rows the team can check (``alert_capacity``
    over the rows; see :func:`budget_share`); without it the top-k metrics are undefined.
    """
    p0 = check_pi0(pi0)
    return _result(sketch, p0, compute(counts_of(sketch), p0, alert_share), 0, alert_share)


def budget_share(capacity: int | None, rows: int) -> float | None:
    """The share of a window's ``rows`` that ``capacity`` alerts cover (at most all of them);
    ``None`` without a capacity or without rows."""
    if capacity is None or rows <= 0:
        return None
    return min(1.0, capacity / rows)


def evaluate_sketches(
    sketches: Sequence[CurveSketch],
    *,
    pi0: float,
    alert_shares: Sequence[float | None] | None = None,
) -> list[EvaluationResult]:
    """``[evaluate_sketch(s, pi0=pi0, alert_share=a) for s, a in zip(sketches, alert_shares)]``,
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
    )
    shares = list(alert_shares) if alert_shares is not None else [None] * len(sketches)
    if len(shares) != len(sketches):
        raise ValueError(f"{len(shares)} alert shares for {len(sketches)} sketches")
    as_array = np.array([np.nan if a is None else a for a in shares], dtype=np.float64)
    columns = compute(counts, p0, as_array)
    return [_result(sketch, p0, columns, row, shares[row]) for row, sketch in enumerate(sketches)]


def _result(
    sketch: CurveSketch,
    p0: float,
    columns: tuple[Columns, Columns, FloatingArray],
    row: int,
    share: float | None,
) -> EvaluationResult:
    """Row ``row`` of :func:`compute`'s columns as the result of ``sketch``."""
    regular_arr, calibrated_arr, pi_arr = columns
    positives, negatives = sketch.positives, sketch.negatives
    j = sketch.threshold_index
    tp = int(np.sum(sketch.positives_at[: j + 1]))
    fp = int(np.sum(sketch.negatives_between[: j + 1]) + np.sum(sketch.negatives_tied[: j + 1]))
    undefined = _no_budget_reasons() if share is None else {}
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
    return ReplicateCounts(
        positives_at=sketch.positives_at.astype(np.float64)[None, :],
        negatives_tied=sketch.negatives_tied.astype(np.float64)[None, :],
        negatives_between=sketch.negatives_between.astype(np.float64)[None, :],
        negatives_below=np.array([float(sketch.negatives_below)]),
        threshold_index=sketch.threshold_index,
        scores=sketch.scores,
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


def _no_budget_reasons() -> dict[str, str]:
    """The top-k metrics of a model without an alert budget: undefined, both variants."""
    reason = "the model has no alert_capacity (its alert budget)"
    return {f"{v}.{name}": reason for name in _NEEDS_BUDGET for v in ("regular", "calibrated")}


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
