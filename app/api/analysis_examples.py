"""Examples of the analyses' requests and answers in the OpenAPI document (app.api.examples
holds the others; a test validates each against its route's model)."""

from __future__ import annotations

from typing import Any, Final

ANALYSIS_REQUESTS: Final[dict[tuple[str, str], Any]] = {}
ANALYSIS_RESPONSES: Final[dict[tuple[str, str], Any]] = {}

_PERIOD: Final[dict[str, Any]] = {
    "segment": "all",
    "first_window": "2026-10-01T00:00:00Z",
    "last_window": "2026-10-30T00:00:00Z",
    "windows": 30,
    "labelled": 600000,
    "positives": 2380,
    "pi": 0.00397,
    "pi_mean": 0.00397,
    "pi_std": 0.00087,
    "current_pi": 0.0049,
    "current_window": "2026-10-30T00:00:00Z",
    "pi0": 0.00425,
    "pi0_version": 1,
    "threshold": 2.5,
}
_AP_AT_0_008: Final[dict[str, Any]] = {"value": 0.349, "ci": [0.330, 0.368], "reason": None}
ANALYSIS_REQUESTS[("post", "/v1/models/{name}/whatif")] = {
    "priors": [0.008],
    "trajectory": {"points": [[0, 0.004], [30, 0.008]], "interpolation": "log"},
}
ANALYSIS_RESPONSES[("post", "/v1/models/{name}/whatif")] = {
    "model": "card-fraud",
    "period": _PERIOD,
    "priors": [{"pi": 0.008, "metrics": {"average_precision": _AP_AT_0_008}}],
    "range": {
        "pi_lo": 0.00137,
        "pi_hi": 0.00657,
        "source": "history",
        "weighted": False,
        "precision": 0.195,
        "precision_ci": [0.186, 0.203],
        "precision_at_ends": [0.079, 0.293],
        "average_precision": 0.268,
        "average_precision_ci": [0.249, 0.286],
        "average_precision_at_ends": [0.183, 0.327],
        "min_average_precision": 0.0020,
        "normalised_average_precision": 0.266,
        "random_average_precision": 0.00397,
        "reason": None,
    },
    "trajectory": {
        "t_start": 0.0,
        "t_end": 30.0,
        "interpolation": "log",
        "precision": 0.265,
        "average_precision": 0.311,
        "random_average_precision": 0.00577,
        "reason": None,
    },
}
_COMPARISON: Final[dict[str, Any]] = {
    "pi": 0.00425,
    "champion": 0.268,
    "challenger": 0.301,
    "difference": 0.033,
    "ci": [0.012, 0.054],
    "leader": "challenger",
    "decided": True,
}
ANALYSIS_RESPONSES[("get", "/v1/models/{name}/compare")] = {
    "champion": "card-fraud",
    "challenger": "card-fraud-v2",
    "metric": "average_precision",
    "pi0": 0.00425,
    "champion_period": _PERIOD,
    "challenger_period": _PERIOD,
    "series": [
        {
            "window_start": "2026-10-30T00:00:00Z",
            "pi": 0.0049,
            "champion": {"value": 0.27, "ci": None, "reason": None},
            "challenger": {"value": 0.3, "ci": None, "reason": None},
            "difference": 0.03,
        }
    ],
    "at_pi0": _COMPARISON,
    "at_current_pi": {**_COMPARISON, "pi": 0.0049},
    "over_range": None,
    "inversions": [],
    "summary": "The challenger's AP is higher at pi0 (0.301 vs 0.268, interval excludes 0).",
}
ANALYSIS_RESPONSES[("get", "/v1/models/{name}/metric-catalogue")] = {
    "model": "card-fraud",
    "pi": 0.00397,
    "ratio": 250.9,
    "pi0": 0.00425,
    "range": [0.0026, 0.0056],
    "metrics": [
        {
            "name": "precision",
            "label": "Precision",
            "lo": 0.0,
            "hi": 1.0,
            "higher_is_better": True,
            "prior_invariant": False,
            "in_registry": True,
            "sensitivity": {"regular": 0.99, "calibrated": 0.0, "reason": None},
            "swing": {"at_pi_lo": 0.21, "at_pi_hi": 0.36},
        }
    ],
}
ANALYSIS_RESPONSES[("get", "/v1/models/{name}/threshold-advice")] = {
    "model": "card-fraud",
    "segment": "all",
    "threshold": 2.0,
    "alert_capacity": 300,
    "reason": None,
    "fraud_rate": {
        "value": 0.0201,
        "ci": [0.0171, 0.0236],
        "source": "measured",
        "window_start": "2026-11-07T23:00:00Z",
    },
    "rows_per_window": 10000.0,
    "fraud_dispersion": 1.9,
    "reference": {
        "version": 1,
        "first_window": "2026-10-31T23:00:00Z",
        "last_window": "2026-11-04T23:00:00Z",
        "pi": 0.0102,
        "precision": 0.236,
    },
    "current": {
        "threshold": 2.0,
        "precision": 0.378,
        "precision_ci": [0.341, 0.418],
        "recall": 0.682,
        "recall_ci": [0.658, 0.706],
        "alerts": 361.2,
        "alerts_interval": [322.0, 409.0],
    },
    "within_capacity": {
        "threshold": 2.2,
        "precision": 0.469,
        "precision_ci": [0.431, 0.512],
        "recall": 0.615,
        "recall_ci": [0.591, 0.642],
        "alerts": 262.3,
        "alerts_interval": [225.0, 299.0],
    },
    "within_capacity_reason": None,
    "restoring_precision": {
        "threshold": 1.63,
        "precision": 0.236,
        "precision_ci": [0.21, 0.267],
        "recall": 0.794,
        "recall_ci": [0.773, 0.815],
        "alerts": 672.3,
        "alerts_interval": [619.0, 733.0],
    },
    "restoring_precision_reason": None,
}

_SIDE_METRIC: Final[dict[str, Any]] = {
    "value": 0.412,
    "ci": [0.371, 0.455],
    "difference": 0.063,
    "difference_ci": [0.031, 0.096],
    "decided": True,
    "reason": None,
}
ANALYSIS_RESPONSES[("get", "/v1/models/{name}/segments/compare")] = {
    "model": "card-fraud",
    "prior": 0.00425,
    "prior_source": "pi0",
    "baseline": "all",
    "first_window": "2026-10-01T00:00:00Z",
    "last_window": "2026-10-30T00:00:00Z",
    "windows": 30,
    "replicates": 1000,
    "whole": {
        "segment": "all",
        "windows": 30,
        "labelled": 600000,
        "positives": 2380,
        "pi": 0.00397,
        "metrics": {
            "average_precision": {
                "value": 0.349,
                "ci": [0.330, 0.368],
                "difference": 0.0,
                "difference_ci": None,
                "decided": None,
                "reason": None,
            }
        },
    },
    "segments": [
        {
            "segment": "web",
            "windows": 30,
            "labelled": 240000,
            "positives": 610,
            "pi": 0.00254,
            "metrics": {"average_precision": _SIDE_METRIC},
        }
    ],
}
ANALYSIS_RESPONSES[("get", "/v1/models/{name}/metric-trust")] = {
    "model": "card-fraud",
    "segment": "all",
    "pi": 0.00397,
    "ratio": 250.9,
    "pi0": 0.00425,
    "ratios": [1.0, 10.0, 100.0, 1000.0, 10000.0],
    "curves": [
        {"metric": "f1", "sensitivity": [0.0, 0.2417, 0.4211, 0.4737, 0.4795]},
        {"metric": "calibrated_f1", "sensitivity": [0.0, 0.0, 0.0, 0.0, 0.0]},
    ],
    "surface": {
        "metric": "f1",
        "centres": [0.25, 0.75],
        "values": [[0.002, 0.005], [0.006, 0.016]],
    },
    "windows": [{"window_start": "2026-10-30T00:00:00Z", "tnr": 0.9981, "tpr": 0.612}],
}
