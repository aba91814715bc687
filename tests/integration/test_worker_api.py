"""The metrics query API over what a real worker stored (both backends)."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.metrics import METRIC_NAMES
from tests.support.api import AuthHeaders, get_json
from tests.support.streams import StreamSpec, day_start, gaussian_window, stream
from tests.support.worker_data import drain, find_model_id, insert_day, insert_rows


def _register(client: TestClient, auth_headers: AuthHeaders) -> None:
    body = {
        "name": "fraud",
        "threshold": 1.5,
        "min_label_coverage": 0.5,
        "reference_windows": 2,
        "reference_min_positives": 50,
    }
    response = client.post("/v1/models", json=body, headers=auth_headers("admin"))
    assert response.status_code == 201, response.text


def _setup(client: TestClient, auth_headers: AuthHeaders, sf: sessionmaker[Session]) -> int:
    _register(client, auth_headers)
    model_id = find_model_id(sf, "fraud")
    spec = StreamSpec("prior_drift", days=5, rows_per_day=3_000, pi_low=0.02, pi_high=0.05)
    for day in stream(spec):
        insert_day(sf, model_id, day, segments=2)
    # Day 5: no positives at all, so every precision-type metric is undefined.
    scores, _ = gaussian_window(np.random.default_rng(9), 500, 0.0, 2.0)
    insert_rows(sf, model_id, day_start(5), scores, np.zeros(500, dtype=np.int8), prefix="z")
    assert drain(sf, replicates=200) == 6
    return model_id


def test_series_window_pi0_and_status(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    _setup(client, auth_headers, session_factory)
    read = auth_headers("read")

    series = get_json(client, read, "/v1/models/fraud/metrics", metric="average_precision")
    assert series["model"] == "fraud"
    assert series["segment"] == "all"
    points = series["points"]
    assert [p["window_start"][:10] for p in points] == [f"2026-01-0{i}" for i in range(1, 7)]
    assert series["pi0"] == points[0]["pi0"]
    first = points[0]
    assert set(first) >= {
        "window_start",
        "n",
        "positives",
        "pi",
        "label_coverage",
        "regular",
        "calibrated",
        "calibrated_ci",
        "regular_ci",
        "prior_effect",
        "performance_effect",
        "verdict",
    }
    low, high = first["calibrated_ci"]
    assert low <= first["calibrated"] <= high
    # The first two windows are the reference; the others are judged against it, once.
    assert [p["verdict"] for p in points[:2]] == ["reference", "reference"]
    assert all(p["judged"] for p in points)
    assert points[4]["verdict"] in {"stable", "prior_shift"}
    assert points[4]["performance_effect"] is not None
    empty = points[5]
    assert empty["positives"] == 0
    assert empty["regular"] is None
    assert empty["calibrated"] is None
    assert "no positives" in empty["reason"]
    # No fraud at all that day: the fraud rate moved, which is not a drop.
    assert empty["verdict"] == "prior_shift"
    # Rows were flagged and none was a fraud: regular precision is 0 (scikit-learn agrees),
    # while its calibrated variant needs both classes and stays undefined.
    precision = get_json(client, read, "/v1/models/fraud/metrics", metric="precision")["points"][5]
    assert precision["regular"] == 0.0
    assert precision["calibrated"] is None
    assert "both classes" in precision["reason"]

    ranged = get_json(
        client,
        read,
        "/v1/models/fraud/metrics",
        metric="roc_auc",
        segment="s1",
        **{"from": "2026-01-02T00:00:00Z", "to": "2026-01-04T00:00:00Z"},
    )
    assert ranged["segment"] == "s1"
    assert [p["window_start"][:10] for p in ranged["points"]] == ["2026-01-02", "2026-01-03"]

    window = get_json(client, read, "/v1/models/fraud/windows/2026-01-05T00:00:00Z")
    assert window["segments"] == ["all", "s0", "s1"]
    assert window["judged_at"] is not None
    assert window["evidence"]["reference_version"] == 1
    assert window["evidence"]["threshold"] == 10.0
    assert window["evidence"]["z"] is not None
    assert set(window["metrics"]) == set(METRIC_NAMES)
    assert window["counts"]["tp"] + window["counts"]["fn"] == window["positives"]
    for variant in ("regular", "calibrated"):
        curve = window["curves"][variant]
        assert 2 <= len(curve["recall"]) <= 200
        assert len(curve["recall"]) == len(curve["precision"]) == len(curve["thresholds"])
    assert window["curves"]["calibrated"]["pi0"] == window["pi0"]
    # ROC and PR-Gain beside the PR curves; a PR-Gain curve's area is the window's PR-Gain AUC.
    roc = window["roc"]
    assert (roc["fpr"][0], roc["tpr"][0], roc["fpr"][-1], roc["tpr"][-1]) == (0, 0, 1, 1)
    assert roc["fpr"] == sorted(roc["fpr"])
    assert window["pr_gain"]["calibrated"]["pi0"] == window["pi0"]
    for variant in ("regular", "calibrated"):
        gain = window["pr_gain"][variant]
        rg, pg = gain["recall_gain"], gain["precision_gain"]
        assert rg[0] == 0.0
        pairs = zip(rg[:-1], rg[1:], pg[:-1], pg[1:], strict=True)
        area = sum((b - a) * (c + d) / 2 for a, b, c, d in pairs)
        assert len(rg) < 200  # not downsampled: the area is exact
        assert area == pytest.approx(window["metrics"]["pr_gain_auc"][variant], abs=1e-12)
    segment = get_json(client, read, "/v1/models/fraud/windows/2026-01-05T00:00:00Z", segment="s0")
    assert segment["rows_total"] == 1_500

    pi0 = get_json(client, read, "/v1/models/fraud/pi0")
    assert pi0["policy"] == "historical"
    assert pi0["current"]["value"] == series["pi0"]
    assert pi0["versions"][-1] == pi0["current"]
    assert len(pi0["history"]) == 6
    assert all(h["used"] for h in pi0["history"])

    alerts = get_json(client, read, "/v1/models/fraud/alerts")
    assert alerts["state"] == "ok"
    assert [s["segment"] for s in alerts["segments"]] == ["all", "s0", "s1"]
    whole = alerts["segments"][0]
    assert whole["state"] == "ok"
    assert whole["signals"] == []
    assert whole["newest_judged_window"].startswith("2026-01-06")
    assert whole["newest_judged_verdict"] == "prior_shift"
    assert whole["evidence_windows"] == 3  # the empty day has nothing to weigh
    assert whole["awaiting_labels"] == {"windows": 0, "rows": 0}

    reference = get_json(client, read, "/v1/models/fraud/reference")
    assert reference["current"]["version"] == 1
    assert reference["current"]["kind"] == "automatic"
    assert [s["segment"] for s in reference["segments"]] == ["all", "s0", "s1"]
    assert reference["segments"][0]["ready"]
    assert reference["segments"][0]["windows"] == 2
    assert reference["segments"][0]["last_window"].startswith("2026-01-02")

    status = get_json(client, read, "/v1/models/fraud/status")
    assert status["dirty_windows"] == 0
    assert status["windows"] == 6
    assert status["worker_lag_seconds"] == 0.0
    assert status["latest_complete_window"].startswith("2026-01-06")
    assert status["workers"][0]["windows_computed"] == 6


def test_unknown_metric_model_window_and_missing_token(
    client: TestClient, auth_headers: AuthHeaders
) -> None:
    _register(client, auth_headers)
    read = auth_headers("read")
    response = client.get("/v1/models/fraud/metrics", params={"metric": "auc"}, headers=read)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["valid_metrics"] == list(METRIC_NAMES)
    assert error["details"][0]["field"] == "metric"
    assert client.get("/v1/models/nope/metrics", headers=read).status_code == 404
    missing = client.get("/v1/models/fraud/windows/2030-01-01T00:00:00Z", headers=read)
    assert missing.status_code == 404
    assert client.get("/v1/models/fraud/status").status_code == 401
    assert client.get("/v1/models/fraud/pi0", headers=auth_headers("ingest")).status_code == 403
    empty = client.get("/v1/models/fraud/metrics", headers=read).json()
    assert empty["points"] == []
    assert empty["pi0"] is None
    status = client.get("/v1/models/fraud/status", headers=read).json()
    assert status["latest_complete_window"] is None
