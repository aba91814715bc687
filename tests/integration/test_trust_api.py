"""Which metric to trust (issue 27): GET .../metric-trust on windows a real worker computed.
The curves are the kernel's imbalance sensitivity (checked against the seed paper's numbers in
tests/metrics), the surface its metric surface at the period's ratio, and each window's
operating point its stored recall and 1 - FPR."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.metrics.sensitivity import (
    SURFACE_METRICS,
    contingency_grid,
    imbalance_sensitivity,
    metric_surface,
)
from tests.support.analyses import add_windows, register
from tests.support.api import AuthHeaders, get_json
from tests.support.worker_data import drain


def test_curves_surface_and_operating_points(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    register(client, auth_headers, "trust", threshold=1.5)
    rng = np.random.default_rng(4)
    windows = []
    for _ in range(3):
        labels = (rng.random(4000) < 0.02).astype(np.int8)
        scores = np.round(rng.normal(2.0 * labels, 1.0), 3).astype(np.float64)
        windows.append((scores, labels))
    add_windows(session_factory, "trust", windows)
    drain(session_factory)
    read = auth_headers("read")

    out = get_json(client, read, "/v1/models/trust/metric-trust", metric="precision")
    assert out["ratio"] == pytest.approx((1 - out["pi"]) / out["pi"])
    assert out["ratios"][0] == 1.0
    assert out["ratio"] in out["ratios"]
    assert out["ratios"][-1] >= 1e4
    assert [c["metric"] for c in out["curves"]] == list(SURFACE_METRICS)
    curves = {c["metric"]: c["sensitivity"] for c in out["curves"]}
    for index in (0, 12, len(out["ratios"]) - 1):
        r = out["ratios"][index]
        assert curves["f1"][index] == imbalance_sensitivity("f1", r)
        assert curves["calibrated_precision"][index] == pytest.approx(0.0, abs=1e-12)
    # Sensitivity grows with the imbalance, about logarithmically at first (the paper's finding).
    assert np.all(np.diff(curves["precision"]) >= -1e-12)
    tnr, tpr = contingency_grid(50)
    expected = metric_surface("precision", out["ratio"], tnr, tpr).values
    assert np.array(out["surface"]["values"], dtype=float) == pytest.approx(expected)
    series = get_json(client, read, "/v1/models/trust/metrics", metric="recall")["points"]
    fpr = get_json(client, read, "/v1/models/trust/metrics", metric="fpr")["points"]
    assert [(w["tpr"], w["tnr"]) for w in out["windows"]] == [
        (r["regular"], 1.0 - f["regular"]) for r, f in zip(series, fpr, strict=True)
    ]

    bad = client.get("/v1/models/trust/metric-trust", params={"metric": "nope"}, headers=read)
    assert bad.status_code == 422
    assert "nope" in bad.text
