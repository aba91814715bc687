"""Examples of the analyses' requests and answers in the OpenAPI document (app.api.examples
holds the others; a test validates each against its route's model). The answers are a real
server's, shortened and rounded, on the analyses' 30 days of tests/support/docs_worlds.py (the
stream docs/analyses.md shows): tests/integration/test_docs_worlds_replay.py checks each against
the answer it stands for. The threshold advice's is from a stream with an alert budget."""

from __future__ import annotations

from typing import Any, Final

ANALYSIS_REQUESTS: Final[dict[tuple[str, str], Any]] = {}
ANALYSIS_RESPONSES: Final[dict[tuple[str, str], Any]] = {}

# The 30 days every analysis example reads: the champion and the challenger scored the same
# rows, so both periods of the comparison are this one too.
_PERIOD: Final[dict[str, Any]] = {
    "segment": "all",
    "first_window": "2026-01-01T00:00:00Z",
    "last_window": "2026-01-30T00:00:00Z",
    "windows": 30,
    "labelled": 600000,
    "positives": 2484,
    "pi": 0.00414,
    "pi_mean": 0.00414,
    "pi_std": 0.00112,
    "current_pi": 0.0056,
    "current_window": "2026-01-30T00:00:00Z",
    "pi0": 0.00431,
    "pi0_version": 3,
    "threshold": 2.5,
}

ANALYSIS_REQUESTS[("post", "/v1/models/{name}/whatif")] = {
    "priors": [0.008],
    "trajectory": {"points": [[0, 0.004], [30, 0.008]], "interpolation": "log"},
}

ANALYSIS_RESPONSES[("post", "/v1/models/{name}/whatif")] = {
    "model": "card-fraud",
    "period": _PERIOD,
    "priors": [
        {
            "pi": 0.008,
            "metrics": {
                "average_precision": {"value": 0.456, "ci": [0.438, 0.476], "reason": None}
            },
        }
    ],
    "range": {
        "pi_lo": 0.000795,
        "pi_hi": 0.00749,
        "source": "history",
        "weighted": False,
        "precision": 0.239,
        "precision_ci": [0.23, 0.248],
        "precision_at_ends": [0.0598, 0.376],
        "average_precision": 0.364,
        "average_precision_ci": [0.345, 0.384],
        "average_precision_at_ends": [0.211, 0.448],
        "min_average_precision": 0.00207,
        "normalised_average_precision": 0.362,
        "random_average_precision": 0.00414,
        "reason": None,
    },
    "trajectory": {
        "t_start": 0.0,
        "t_end": 30.0,
        "interpolation": "log",
        "precision": 0.315,
        "average_precision": 0.414,
        "random_average_precision": 0.00577,
        "reason": None,
    },
}

ANALYSIS_RESPONSES[("get", "/v1/models/{name}/compare")] = {
    "champion": "card-fraud",
    "challenger": "card-fraud-v2",
    "metric": "average_precision",
    "pi0": 0.00431,
    "champion_period": _PERIOD,
    "challenger_period": _PERIOD,
    "series": [
        {
            "window_start": "2026-01-01T00:00:00Z",
            "pi": 0.0057,
            "champion": {"value": 0.361, "ci": [0.268, 0.435], "reason": None},
            "challenger": {"value": 0.406, "ci": [0.316, 0.509], "reason": None},
            "difference": 0.0448,
        }
    ],
    "at_pi0": {
        "pi": 0.00431,
        "champion": 0.382,
        "challenger": 0.415,
        "difference": 0.0329,
        "ci": [0.00468, 0.0608],
        "leader": "challenger",
        "decided": True,
    },
    "at_current_pi": {
        "pi": 0.0056,
        "champion": 0.413,
        "challenger": 0.457,
        "difference": 0.0444,
        "ci": [0.0166, 0.0715],
        "leader": "challenger",
        "decided": True,
    },
    "over_range": {
        "pi": None,
        "champion": 0.364,
        "challenger": 0.39,
        "difference": 0.0266,
        "ci": [-0.0015, 0.0538],
        "leader": "challenger",
        "decided": False,
        "pi_lo": 0.000795,
        "pi_hi": 0.00749,
        "flips_inside": [0.00189],
    },
    "inversions": [{"pi": 0.00189, "below": "champion", "above": "challenger"}],
    "summary": (
        "By average precision the champion leads below 0.189%, the challenger above "
        "0.189%; at the current fraud rate 0.56% the challenger leads by 0.0444 "
        "(challenger - champion: 95% interval +0.0166 to +0.0715, decided); over the "
        "history's range 0.0795% to 0.749% neither leads throughout (the order flips at "
        "0.189%)."
    ),
}

ANALYSIS_RESPONSES[("get", "/v1/models/{name}/metric-catalogue")] = {
    "model": "card-fraud",
    "pi": 0.00414,
    "ratio": 240.5,
    "pi0": 0.00431,
    "range": [0.0023, 0.00615],
    "metrics": [
        {
            "name": "precision",
            "label": "Precision",
            "lo": 0.0,
            "hi": 1.0,
            "higher_is_better": True,
            "prior_invariant": False,
            "in_registry": True,
            "sensitivity": {"regular": 0.488, "calibrated": 0.0, "reason": None},
            "swing": {"at_pi_lo": 0.156, "at_pi_hi": 0.331},
        }
    ],
}

Estimate = tuple[float, list[float]]


def _expected(threshold: float, precision: Estimate, recall: Estimate, alerts: Estimate) -> Any:
    """One threshold's expectations in the threshold advice: each value with its interval."""
    return {
        "threshold": threshold,
        "precision": precision[0],
        "precision_ci": precision[1],
        "recall": recall[0],
        "recall_ci": recall[1],
        "alerts": alerts[0],
        "alerts_interval": alerts[1],
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
    "current": _expected(
        2.0, (0.378, [0.341, 0.418]), (0.682, [0.658, 0.706]), (361.2, [322.0, 409.0])
    ),
    "within_capacity": _expected(
        2.2, (0.469, [0.431, 0.512]), (0.615, [0.591, 0.642]), (262.3, [225.0, 299.0])
    ),
    "within_capacity_reason": None,
    "restoring_precision": _expected(
        1.63, (0.236, [0.21, 0.267]), (0.794, [0.773, 0.815]), (672.3, [619.0, 733.0])
    ),
    "restoring_precision_reason": None,
}

ANALYSIS_RESPONSES[("get", "/v1/models/{name}/segments/compare")] = {
    "model": "card-fraud",
    "prior": 0.00431,
    "prior_source": "pi0",
    "baseline": "all",
    "first_window": "2026-01-01T00:00:00Z",
    "last_window": "2026-01-30T00:00:00Z",
    "windows": 30,
    "replicates": 1000,
    "whole": {
        "segment": "all",
        "windows": 30,
        "labelled": 600000,
        "positives": 2484,
        "pi": 0.00414,
        "metrics": {
            "average_precision": {
                "value": 0.382,
                "ci": [0.356, 0.409],
                "difference": 0.0,
                "difference_ci": None,
                "decided": None,
                "reason": None,
            }
        },
    },
    "segments": [
        {
            "segment": "DE",
            "windows": 30,
            "labelled": 200245,
            "positives": 838,
            "pi": 0.00418,
            "metrics": {
                "average_precision": {
                    "value": 0.377,
                    "ci": [0.343, 0.415],
                    "difference": -0.00431,
                    "difference_ci": [-0.0333, 0.0241],
                    "decided": False,
                    "reason": None,
                }
            },
        }
    ],
}

ANALYSIS_RESPONSES[("get", "/v1/models/{name}/metric-trust")] = {
    "model": "card-fraud",
    "segment": "all",
    "pi": 0.00414,
    "ratio": 240.5,
    "pi0": 0.00431,
    "ratios": [1.0, 1.47, 2.15, 3.16, 4.64],
    "curves": [
        {"metric": "accuracy", "sensitivity": [0.0, 0.0316, 0.061, 0.0866, 0.108]},
        {"metric": "precision", "sensitivity": [0.0, 0.0736, 0.144, 0.209, 0.267]},
    ],
    "surface": {
        "metric": "f1",
        "centres": [0.01, 0.03],
        "values": [[8.36e-05, 8.53e-05], [0.000251, 0.000256]],
    },
    "windows": [{"window_start": "2026-01-01T00:00:00Z", "tnr": 0.994, "tpr": 0.421}],
}
