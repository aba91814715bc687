"""The metric catalogue through the API: the seed paper's statements at the model's own ratio.

Seed paper ("Measuring Class-Imbalance Sensitivity of Deterministic Performance Evaluation
Metrics", Fig. 4): recall, TSS and Youden's J have zero sensitivity; precision is the most
sensitive, followed by F1, accuracy and HSS. Calibrated precision and F1 (Siblini eq. 5) have
none, which is why calmon alerts on calibrated values.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.metrics import METRIC_NAMES
from app.metrics.sensitivity import imbalance_sensitivity
from tests.support.analyses import add_windows, register
from tests.support.api import AuthHeaders
from tests.support.streams import day_start, gaussian_window
from tests.support.worker_data import drain


def test_catalogue_gives_every_metric_its_sensitivity_at_the_models_ratio(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """Seed paper Fig. 4 through the API at the model's own 1:r, plus every registry metric's
    spec and its swing over the history's range of fraud rates."""
    rng = np.random.default_rng(2)
    register(client, auth_headers, "fraud", threshold=1.5)
    windows = [gaussian_window(rng, 3000, pi, 2.0) for pi in (0.01, 0.03, 0.02)]
    add_windows(session_factory, "fraud", windows)
    drain(session_factory)
    read = auth_headers("read")

    response = client.get("/v1/models/fraud/metric-catalogue", headers=read)
    assert response.status_code == 200, response.text
    out = response.json()
    entries = {m["name"]: m for m in out["metrics"]}
    assert [m["name"] for m in out["metrics"] if m["in_registry"]] == list(METRIC_NAMES)
    assert out["ratio"] == pytest.approx((1 - out["pi"]) / out["pi"])
    assert 0.01 < out["pi"] < 0.03

    def regular(name: str) -> float:
        value = entries[name]["sensitivity"]["regular"]
        assert value is not None
        return float(value)

    assert regular("recall") == 0.0
    assert regular("tss") < 1e-15
    assert regular("youden") < 1e-15
    assert regular("precision") > regular("f1") > regular("accuracy") > regular("hss") > 0.0
    assert regular("precision") == imbalance_sensitivity("precision", out["ratio"])
    assert entries["precision"]["sensitivity"]["calibrated"] < 1e-12
    assert entries["f1"]["sensitivity"]["calibrated"] < 1e-12
    # Curve metrics: no single confusion matrix, so no volume, and a reason instead.
    ap = entries["average_precision"]
    assert ap["sensitivity"]["regular"] is None
    assert "all thresholds" in ap["sensitivity"]["reason"]
    assert ap["prior_invariant"] is False
    # Over the history's range the fraud rate alone moves AP and F1, never recall or ROC AUC.
    assert ap["swing"]["at_pi_hi"] > ap["swing"]["at_pi_lo"]
    for name in ("recall", "roc_auc"):
        assert entries[name]["swing"]["at_pi_lo"] == entries[name]["swing"]["at_pi_hi"]

    at_half = client.get("/v1/models/fraud/metric-catalogue", params={"pi": 0.5}, headers=read)
    assert at_half.status_code == 200
    assert at_half.json()["ratio"] == 1.0
    balanced = {m["name"]: m for m in at_half.json()["metrics"]}
    assert balanced["precision"]["sensitivity"]["regular"] == 0.0
    bad = client.get("/v1/models/fraud/metric-catalogue", params={"pi": 1.5}, headers=read)
    assert bad.status_code == 422
    assert "pi" in bad.text


def test_a_window_of_frauds_only_has_no_swing_but_the_catalogue_answers(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """A fraud-only feed past its horizon can hold a window whose every row is a fraud (pi 1):
    there is no curve at pi 1, so that side of the swing is None (it was a 500, found by
    schemathesis)."""
    rng = np.random.default_rng(5)
    register(client, auth_headers, "fraud", threshold=1.5)
    admin = auth_headers("admin", "ingest")
    patched = client.patch("/v1/models/fraud", json={"label_horizon_days": 1}, headers=admin)
    assert patched.status_code == 200, patched.text
    frauds_only = (rng.normal(2.0, 1.0, 40), np.ones(40, dtype=np.int8))
    windows = [gaussian_window(rng, 3000, 0.02, 2.0), frauds_only]
    windows += [gaussian_window(rng, 3000, 0.02, 2.0) for _ in range(3)]  # the clock moves on
    for day, (scores, labels) in enumerate(windows):
        rows = [
            {
                "id": f"d{day}-{i}",
                "timestamp": (day_start(day) + timedelta(seconds=i)).isoformat(),
                "score": float(score),
                "label": int(label) if label else None,  # legitimate: nobody complained
            }
            for i, (score, label) in enumerate(zip(scores, labels, strict=True))
        ]
        sent = client.post(
            "/v1/models/fraud/batches", json={"batch_id": f"d{day}", "rows": rows}, headers=admin
        )
        assert sent.status_code == 201, sent.text
    drain(session_factory)
    response = client.get("/v1/models/fraud/metric-catalogue", headers=auth_headers("read"))
    assert response.status_code == 200, response.text
    out = response.json()
    assert out["range"][1] == 1.0
    ap = next(m for m in out["metrics"] if m["name"] == "average_precision")
    assert ap["swing"]["at_pi_hi"] is None
    assert ap["swing"]["at_pi_lo"] is not None
