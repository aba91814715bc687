"""The one registry of metric names.

The database rows, the API schemas, the Prometheus label values and the kernel's own output all
iterate over :data:`METRICS`, so adding a metric is one entry here plus its computation in
``_kernel.py`` (a test checks the two agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """What a consumer needs to know about one metric.

    Attributes
    ----------
    name:
        Stable machine name (JSON keys, database rows, Prometheus ``metric`` label).
    label:
        Human-readable name for dashboards.
    lo, hi:
        Range of the metric; ``None`` where it is unbounded on that side.
    higher_is_better:
        ``True``/``False`` for quality measures, ``None`` for descriptive values (a threshold).
    prior_invariant:
        ``True`` if the value does not depend on the positive ratio pi; its calibrated value is
        then the regular one.
    """

    name: str
    label: str
    lo: float | None
    hi: float | None
    higher_is_better: bool | None
    prior_invariant: bool


METRICS: Final[tuple[MetricSpec, ...]] = (
    MetricSpec("precision", "Precision", 0.0, 1.0, True, False),
    MetricSpec("recall", "Recall (true positive rate)", 0.0, 1.0, True, True),
    MetricSpec("fpr", "False positive rate", 0.0, 1.0, False, True),
    MetricSpec("f1", "F1 score", 0.0, 1.0, True, False),
    MetricSpec("average_precision", "Average precision (AUC-PR)", 0.0, 1.0, True, False),
    MetricSpec("roc_auc", "ROC AUC", 0.0, 1.0, True, True),
    # Precision gain is unbounded below (a point with more false positives than the prior allows
    # has negative gain) and the reference implementation integrates those parts too.
    MetricSpec("pr_gain_auc", "PR-Gain AUC", None, 1.0, True, False),
    MetricSpec("best_f1", "Best F1 over thresholds", 0.0, 1.0, True, False),
    MetricSpec("best_f1_threshold", "Threshold of the best F1", None, None, None, False),
    MetricSpec("lr_plus", "Positive likelihood ratio (TPR/FPR)", 0.0, None, True, True),
    MetricSpec("lr_minus", "Negative likelihood ratio (FNR/TNR)", 0.0, None, False, True),
    # The alert budget (model setting alert_capacity): what a fraud team checks per window.
    MetricSpec("alerts", "Alerts (rows at or above the threshold)", 0.0, None, None, False),
    MetricSpec("precision_at_k", "Precision at k (the alert budget)", 0.0, 1.0, True, False),
    MetricSpec("precision_at_k_max", "Achievable precision at k", 0.0, 1.0, None, False),
    # Per entity (row field entity): the handbook's card precision, one alert per card.
    MetricSpec("entity_precision_at_k", "Card precision at k (per entity)", 0.0, 1.0, True, False),
    # Money (row field amount; model setting review_cost): what the model's alerts catch.
    MetricSpec(
        "value_recall", "Value recall (share of the fraud amount caught)", 0.0, 1.0, True, True
    ),
    MetricSpec(
        "value_precision",
        "Value precision (fraud share of the flagged amount)",
        0.0,
        1.0,
        True,
        False,
    ),
    MetricSpec(
        "net_savings",
        "Net savings (fraud amount caught minus review cost)",
        None,
        None,
        True,
        False,
    ),
)

METRIC_NAMES: Final[tuple[str, ...]] = tuple(spec.name for spec in METRICS)

METRICS_BY_NAME: Final = MappingProxyType({spec.name: spec for spec in METRICS})


def metric_spec(name: str) -> MetricSpec:
    """Return the registry entry for ``name``; ``KeyError`` names the known metrics."""
    try:
        return METRICS_BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}") from None
