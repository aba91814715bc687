"""Which metric to trust: each registry metric's imbalance sensitivity at a class ratio.

The seed paper ("Measuring Class-Imbalance Sensitivity of Deterministic Performance Evaluation
Metrics") measures how much a metric of one confusion matrix moves between a balanced and a
1:r population with the same rates (:func:`app.metrics.sensitivity.imbalance_sensitivity`).
Here every registry metric is mapped to its surface, regular and calibrated (the calibrated
surface is Siblini's, at pi0). A metric over all thresholds (AP, best F1, ROC AUC, PR-Gain) is
not a function of one confusion matrix, so the paper's volume does not apply to it: its entry
says so, and how much it moves with pi is what :mod:`app.metrics.whatif` shows on a real curve.
The seed paper's own reference metrics (accuracy, TSS, HSS, Youden's J) are listed beside the
registry, for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from app.metrics.registry import METRICS
from app.metrics.sensitivity import imbalance_sensitivity

# registry name -> (surface of the regular metric, surface of its calibrated variant)
_SURFACES: Final[dict[str, tuple[str, str]]] = {
    "precision": ("precision", "calibrated_precision"),
    "recall": ("recall", "recall"),
    "fpr": ("fpr", "fpr"),
    "f1": ("f1", "calibrated_f1"),
}
_UNBOUNDED = (
    "an unbounded ratio of rates: the seed paper's volume is defined for metrics in [0, 1] "
    "(it depends on TPR and FPR only, so it does not move with the class ratio)"
)
_CURVE = (
    "a metric over all thresholds, not of one confusion matrix: the seed paper's volume does "
    "not apply (see prior_invariant, and what-if for how it moves with the fraud rate)"
)
_REASONS: Final[dict[str, str]] = {
    "lr_plus": _UNBOUNDED,
    "lr_minus": _UNBOUNDED,
    "best_f1_threshold": "a threshold, not a quality measure",
    "alerts": "a count of rows, not a rate in [0, 1]: the seed paper's volume does not apply "
    "(its calibrated value is the count a window of the same size would flag at pi0)",
    "precision_at_k": "precision at a fixed share of the rows (the alert budget), not at a "
    "fixed threshold: the cut moves with the fraud rate, so it is no function of one "
    "confusion matrix's rates (see what-if for how it moves with the fraud rate)",
    "precision_at_k_max": "the most any ranking reaches, min(frauds, k) / k: set by the fraud "
    "rate and the budget alone, not by the model",
    "entity_precision_at_k": "precision at a fixed share of the entities (cards, accounts), "
    "each at its highest score: like precision at k, no function of one confusion matrix's "
    "rates (see what-if for how it moves with the fraud rate)",
    "value_recall": "recall weighted by each fraud's amount: a function of the frauds alone, so "
    "it does not move with the fraud rate (prior_invariant); the seed paper's volume is "
    "defined on counts, not on amounts",
    "value_precision": "precision weighted by each row's amount: it moves with the fraud rate as "
    "precision does (calibrated: legitimate amounts weighted by k), but on amounts, not on the "
    "counts of one confusion matrix the seed paper's volume is defined on",
    "net_savings": "an amount of money, not a rate in [0, 1]: the seed paper's volume does not "
    "apply (its calibrated value is what a window of the same size would save at pi0)",
}
REFERENCE_METRICS: Final[dict[str, str]] = {
    "accuracy": "Accuracy",
    "tss": "True skill statistic (TPR - FPR)",
    "hss": "Heidke skill score",
    "youden": "Youden's J (TPR + TNR - 1)",
}


@dataclass(frozen=True)
class Sensitivity:
    """A metric's imbalance sensitivity between 1:1 and 1:``ratio`` (None: see ``reason``)."""

    name: str
    regular: float | None
    calibrated: float | None
    reason: str | None


def registry_sensitivities(ratio: float, pi0: float, grid: int = 100) -> list[Sensitivity]:
    """Every registry metric's sensitivity at 1:``ratio`` (calibrated variants at ``pi0``)."""
    out = []
    for spec in METRICS:
        surfaces = _SURFACES.get(spec.name)
        if surfaces is None:
            out.append(Sensitivity(spec.name, None, None, _REASONS.get(spec.name, _CURVE)))
            continue
        regular, calibrated = (
            imbalance_sensitivity(surface, ratio, grid, pi0=pi0) for surface in surfaces
        )
        out.append(Sensitivity(spec.name, regular, calibrated, None))
    return out


def reference_sensitivities(ratio: float, grid: int = 100) -> list[Sensitivity]:
    """The seed paper's reference metrics at 1:``ratio`` (no calibrated variant)."""
    return [
        Sensitivity(name, imbalance_sensitivity(name, ratio, grid), None, "no calibrated variant")
        for name in REFERENCE_METRICS
    ]
