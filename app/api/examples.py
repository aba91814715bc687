"""One example per operation, for the OpenAPI document (/docs shows and sends them).

Kept in one place and checked by tests: every response example validates against its route's
response model, every request example against its request model, and the batch example is
posted to a real server.
"""

from __future__ import annotations

from typing import Any, Final

from app.api.analysis_examples import ANALYSIS_REQUESTS, ANALYSIS_RESPONSES

_MODEL: Final[dict[str, Any]] = {
    "name": "card-fraud",
    "threshold": 0.62,
    "granularity": "day",
    "timezone": "Europe/Paris",
    "pi0": {"policy": "historical", "lookback_windows": None},
    "min_label_coverage": 0.8,
    "pi0_tolerance": 0.1,
    "alert_floor": None,
    "reference_windows": 14,
    "reference_min_positives": 500,
    "detection_drop": 0.3,
    "retention_windows": None,
    "label_horizon_days": None,
    "alert_capacity": None,
    "review_cost": None,
    "raw_kept_from": None,
    "created_at": "2026-10-01T08:00:00Z",
    "updated_at": "2026-10-01T08:00:00Z",
}
_TOKEN: Final[dict[str, Any]] = {
    "id": 3,
    "name": "prediction-feed",
    "prefix": "cm_4f9a",
    "scopes": ["ingest"],
    "models": ["card-fraud"],
    "created_at": "2026-10-01T08:00:00Z",
    "revoked_at": None,
}
_WINDOW = "2026-10-31T23:00:00Z"
_FIRST_VERSION: Final[dict[str, Any]] = {
    "version": 1,
    "kind": "automatic",
    "start": None,
    "end": None,
    "as_of": None,
    "created_at": "2026-10-01T08:00:00Z",
}
_REFERENCE: Final[dict[str, Any]] = {
    "model": "card-fraud",
    # A model that never changed its reference: the current version is the only one.
    "current": _FIRST_VERSION,
    "versions": [_FIRST_VERSION],
    "segments": [
        {
            "segment": "all",
            "ready": True,
            "first_window": "2026-09-30T22:00:00Z",
            "last_window": "2026-10-13T22:00:00Z",
            "windows": 14,
            "positives": 1680,
            "calibrated_average_precision": 0.71,
            "reason": None,
        }
    ],
}
_AP_POINT: Final[dict[str, Any]] = {
    "window_start": _WINDOW,
    "n": 41800,
    "rows_total": 42000,
    "positives": 168,
    "pi": 0.00402,
    "pi0": 0.004,
    "label_coverage": 0.995,
    "regular": 0.712,
    "calibrated": 0.71,
    "regular_ci": [0.668, 0.754],
    "calibrated_ci": [0.666, 0.752],
    "prior_effect": 0.002,
    "performance_effect": -0.001,
    "verdict": "stable",
    "judged": True,
    "mature": True,
    "reason": None,
    "nowcast": None,
    "early": None,
}

ROW_BATCH: Final[dict[str, Any]] = {
    "batch_id": "2026-11-01T10",
    "rows": [
        {
            "id": "tx-1",
            "timestamp": "2026-11-01T10:00:00Z",
            "score": 0.93,
            "label": 1,
            "segment": "FR",
            "amount": 129.9,
            "entity": "card-4471",
        },
        {"id": "tx-2", "timestamp": "2026-11-01T10:00:05Z", "score": 0.12, "label": 0},
        {"id": "tx-3", "timestamp": "2026-11-01T10:00:09Z", "score": 0.71, "label": None},
        {
            "id": "tx-8",
            "timestamp": "2026-11-01T10:00:12Z",
            "score": 0.88,
            "label": 1,
            "labelled_at": "2026-11-01T15:40:00Z",
            "source": "feedback",
        },
    ],
}
COLUMNAR_BATCH: Final[dict[str, Any]] = {
    "batch_id": "2026-11-01T11",
    "columns": {
        "id": ["tx-4", "tx-5"],
        "timestamp": [1793527200, 1793527205.5],
        "score": [0.08, 0.66],
        "label": [None, 1],
        "segment": ["FR", None],
        "amount": [18.5, 240.0],
        "entity": ["card-0032", "card-4471"],
    },
}
CSV_BATCH: Final = (
    "id,timestamp,score,label,segment,amount,entity\n"
    "tx-6,2026-11-01T12:00:00Z,0.41,,FR,35.2,card-0032\n"
    "tx-7,2026-11-01T12:00:03Z,0.97,1,,,\n"
)
LABELS_JSON: Final[dict[str, Any]] = {
    "labels": [
        {"id": "tx-3", "label": 1, "labelled_at": "2026-11-20T09:12:00Z", "source": "chargeback"},
        {"id": "tx-404", "label": 0},
    ]
}
LABELS_CSV: Final = (
    "id,label,labelled_at,source\ntx-3,1,2026-11-20T09:12:00Z,chargeback\ntx-404,0,,\n"
)

REQUESTS: Final[dict[tuple[str, str], dict[str, Any]]] = {
    ("post", "/v1/models"): {
        "name": "card-fraud",
        "threshold": 0.62,
        "granularity": "day",
        "timezone": "Europe/Paris",
        "pi0": {"policy": "historical"},
    },
    ("patch", "/v1/models/{name}"): {"threshold": 0.58, "alert_floor": 0.5},
    ("post", "/v1/tokens"): {
        "name": "prediction-feed",
        "scopes": ["ingest"],
        "models": ["card-fraud"],
    },
    ("post", "/v1/models/{name}/reference"): {
        "kind": "period",
        "start": "2026-10-01",
        "end": "2026-10-14",
    },
}
"""Request bodies pydantic reads (the ingestion routes document theirs in openapi_extra)."""

RESPONSES: Final[dict[tuple[str, str], Any]] = {
    ("get", "/healthz"): {"status": "ok"},
    ("get", "/readyz"): {"status": "ready", "schema_revision": "0007"},
    ("get", "/metrics"): None,  # Prometheus text, not JSON: its example is the text below
    ("post", "/v1/models"): _MODEL,
    ("get", "/v1/models"): [_MODEL],
    ("get", "/v1/models/{name}"): _MODEL,
    ("patch", "/v1/models/{name}"): {**_MODEL, "threshold": 0.58, "alert_floor": 0.5},
    ("delete", "/v1/models/{name}"): {"name": "card-fraud", "predictions_purged": False},
    ("post", "/v1/tokens"): {**_TOKEN, "token": "cm_4f9a0c2e..."},
    ("get", "/v1/tokens"): [_TOKEN],
    ("delete", "/v1/tokens/{token_id}"): {**_TOKEN, "revoked_at": "2026-11-02T09:00:00Z"},
    ("get", "/v1/audit"): [
        {
            "id": 42,
            "at": "2026-11-02T09:00:00Z",
            "actor": "ops",
            "token_id": 1,
            "action": "model.changed",
            "model": "card-fraud",
            "detail": {"threshold": {"before": 0.62, "after": 0.58}},
        }
    ],
    ("post", "/v1/models/{name}/batches"): {
        "batch_id": "2026-11-01T10",
        "rows_inserted": 3,
        "rows_updated": 0,
        "rows_unchanged": 0,
        "windows_touched": [_WINDOW],
    },
    ("post", "/v1/models/{name}/labels"): {
        "rows_updated": 1,
        "rows_unchanged": 0,
        "unknown_ids": ["tx-404"],
        "windows_touched": [_WINDOW],
    },
    ("get", "/v1/models/{name}/metrics"): {
        "model": "card-fraud",
        "metric": "average_precision",
        "segment": "all",
        "pi0": 0.004,
        "pi0_version": 1,
        "points": [_AP_POINT],
    },
    ("get", "/v1/models/{name}/windows/{window_start}"): {
        "model": "card-fraud",
        "window_start": _WINDOW,
        "segment": "all",
        "segments": ["FR", "all"],
        "rows_total": 42000,
        "n": 41800,
        "positives": 168,
        "negatives": 41632,
        "pi": 0.00402,
        "pi0": 0.004,
        "pi0_version": 1,
        "label_coverage": 0.995,
        "mature": True,
        "threshold": 0.62,
        "verdict": "stable",
        "verdict_reason": None,
        "judged_at": "2026-12-01T03:00:00Z",
        "evidence": None,
        "nowcast": None,
        "early": None,
        "computed_at": "2026-12-01T03:00:00Z",
        "duration_seconds": 0.41,
        "counts": {"tp": 121, "fp": 63, "tn": 41569, "fn": 47},
        "metrics": {
            "average_precision": {
                key: _AP_POINT[key]
                for key in (
                    "regular",
                    "calibrated",
                    "regular_ci",
                    "calibrated_ci",
                    "prior_effect",
                    "performance_effect",
                    "reason",
                )
            }
        },
        "curves": {
            "regular": {
                "recall": [0.0, 0.5, 1.0],
                "precision": [1.0, 0.9, 0.004],
                "thresholds": [0.99, 0.7, 0.0],
                "pi0": None,
            }
        },
    },
    ("get", "/v1/models/{name}/segments"): {
        "model": "card-fraud",
        "segments": [
            {"segment": "all", "windows": 31, "rows": 1302000, "newest_window": _WINDOW},
            {"segment": "FR", "windows": 31, "rows": 651000, "newest_window": _WINDOW},
        ],
    },
    ("get", "/v1/models/{name}/pi0"): {
        "model": "card-fraud",
        "policy": "historical",
        "tolerance": 0.1,
        "current": {
            "version": 1,
            "value": 0.004,
            "policy": "historical",
            "windows_used": 14,
            "rows_used": 585200,
            "positives_used": 2341,
            "computed_at": "2026-10-15T03:00:00Z",
        },
        "candidate": 0.00402,
        "versions": [],
        "history": [
            {
                "window_start": _WINDOW,
                "labelled": 41800,
                "positives": 168,
                "pi": 0.00402,
                "label_coverage": 0.995,
                "used": True,
            }
        ],
    },
    ("get", "/v1/models/{name}/status"): {
        "model": "card-fraud",
        "latest_complete_window": _WINDOW,
        "latest_computed_at": "2026-11-02T00:05:00Z",
        "windows": 32,
        "dirty_windows": 1,
        "failing_windows": 0,
        "parked_windows": 0,
        "parked": [],
        "oldest_dirty_update": "2026-11-02T09:59:58Z",
        "worker_lag_seconds": 2.1,
        "workers": [
            {
                "worker_id": "host-1:4242",
                "started_at": "2026-11-01T08:00:00Z",
                "last_seen_at": "2026-11-02T10:00:00Z",
                "stopped_at": None,
                "windows_computed": 180,
                "failures": 0,
                "last_duration_seconds": 0.4,
            }
        ],
    },
    ("get", "/v1/models/{name}/alerts"): {
        "model": "card-fraud",
        "state": "ok",
        "segments": [
            {
                "segment": "all",
                "state": "ok",
                "signals": [],
                "reason": None,
                "reference_version": 1,
                "reference_average_precision": 0.71,
                "drop_evidence": 0.0,
                "threshold": 5.1,
                "evidence_windows": 17,
                "newest_judged_window": _WINDOW,
                "newest_judged_verdict": "stable",
                "episode_start": None,
                "awaiting_labels": {"windows": 23, "rows": 966000},
                "early": {
                    "drop_evidence": 0.0,
                    "paging": False,
                    "windows": 23,
                    "as_of": "2026-12-01T00:00:00Z",
                },
            }
        ],
    },
    ("get", "/v1/models/{name}/reference"): _REFERENCE,
    ("post", "/v1/models/{name}/reference"): _REFERENCE,
}
"""The success response of every operation."""

PROMETHEUS_TEXT: Final = (
    "# TYPE calmon_alert_state gauge\n"
    'calmon_alert_state{model="card-fraud",segment="all",state="ok"} 1.0\n'
)

# The analyses (app.api.routers.analyses): numbers from the README's simulated 30-day run.

# The analyses' examples (what-if, compare, catalogue, advice, segments) live in their own module.
REQUESTS.update(ANALYSIS_REQUESTS)
RESPONSES.update(ANALYSIS_RESPONSES)
RESPONSES[("get", "/v1/status")] = {
    "models": 4,
    "dirty_windows": 2,
    "failing_windows": 0,
    "parked_windows": 0,
    "oldest_dirty_update": "2026-10-30T08:14:05Z",
    "worker_lag_seconds": 3.2,
    "workers_alive": 1,
}
