"""GET /v1/models/{name}/threshold-advice through the API, on windows a real worker computed.

A reference of five windows at fraud rate 1%, then the rate doubles: at the threshold now the
alerts overflow the team's capacity, so the capacity advice raises the threshold and the
precision advice (precision rose with the fraud rate) lowers it. The answer equals the kernel's
advice on the stored reference sketch, with the service's inputs.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app import cli
from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.metrics import CurveSketch
from app.metrics.threshold_advice import Situation, advise
from app.services.threshold_advice import ADVICE_SEED
from app.settings import Settings
from tests.support.analyses import add_windows, register
from tests.support.api import AuthHeaders
from tests.support.streams import day_start, gaussian_window
from tests.support.worker_data import drain, find_model_id

ROWS, CAPACITY, THRESHOLD = 10_000, 300, 2.0


def _seed(client: TestClient, auth_headers: AuthHeaders, sf: sessionmaker[Session]) -> None:
    register(
        client,
        auth_headers,
        "cards",
        threshold=THRESHOLD,
        alert_capacity=CAPACITY,
        reference_windows=5,
        reference_min_positives=100,
    )
    rng = np.random.default_rng(24)
    windows = [gaussian_window(rng, ROWS, 0.01, 2.5) for _ in range(5)]
    windows += [gaussian_window(rng, ROWS, 0.02, 2.5) for _ in range(3)]
    add_windows(sf, "cards", windows)
    drain(sf)


def test_the_advice_follows_a_doubled_fraud_rate_and_calmon_advice_prints_it(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The API's advice, checked against the kernel; then `calmon advice` on the same seeded
    model (one seeding: eight windows of 10,000 rows and a worker pass, the test's cost)."""
    _seed(client, auth_headers, session_factory)
    response = client.get("/v1/models/cards/threshold-advice", headers=auth_headers("read"))
    assert response.status_code == 200, response.text
    advice = response.json()
    assert advice["reason"] is None
    assert advice["alert_capacity"] == CAPACITY
    assert advice["reference"]["first_window"] == day_start(0).isoformat().replace("+00:00", "Z")
    assert advice["reference"]["last_window"] == day_start(4).isoformat().replace("+00:00", "Z")
    now = advice["fraud_rate"]
    assert now["source"] == "measured"
    assert now["window_start"] == day_start(7).isoformat().replace("+00:00", "Z")
    assert 0.015 < now["value"] < 0.025
    current, within = advice["current"], advice["within_capacity"]
    restoring = advice["restoring_precision"]
    assert current["threshold"] <= THRESHOLD
    assert current["alerts"] > CAPACITY  # the doubled rate overflows the budget
    assert within["threshold"] > THRESHOLD
    assert within["alerts_interval"][1] <= CAPACITY
    assert restoring["threshold"] < THRESHOLD  # precision rose: the threshold can come down
    assert restoring["precision"] >= advice["reference"]["precision"]
    assert restoring["recall"] > current["recall"]
    assert advice["within_capacity_reason"] is None
    assert advice["restoring_precision_reason"] is None

    # The kernel on the stored reference sketch, with the service's inputs, gives the same.
    with session_factory() as session:
        model_id = find_model_id(session_factory, "cards")
        monitoring = MonitoringRepository(session)
        spec = monitoring.current_spec(model_id)
        assert spec is not None
        frozen = monitoring.segment_references(model_id, spec.version)["all"]
        rows = WindowMetricsRepository(session).segment_rows(model_id, "all")
        sketch = CurveSketch.from_bytes(frozen.sketch)
    direct = advise(
        sketch,
        Situation(
            pi=now["value"],
            pi_interval=(now["ci"][0], now["ci"][1]),
            rows=statistics.median(r.rows_total for r in rows[-7:]),
            threshold=THRESHOLD,
            capacity=CAPACITY,
            target_precision=advice["reference"]["precision"],
            fraud_dispersion=advice["fraud_dispersion"],
        ),
        seed=ADVICE_SEED,
    )
    assert direct.within_capacity is not None
    assert direct.restoring_precision is not None
    assert within["threshold"] == direct.within_capacity.threshold
    assert within["alerts"] == direct.within_capacity.alerts
    assert restoring["threshold"] == direct.restoring_precision.threshold
    assert restoring["precision"] == direct.restoring_precision.precision
    assert advice["fraud_dispersion"] >= 1.0
    _check_calmon_advice_prints_what_the_api_gives(settings, advice, capsys)


def test_without_a_reference_the_advice_says_why(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    register(client, auth_headers, "young", threshold=THRESHOLD, reference_windows=30)
    add_windows(
        session_factory, "young", [gaussian_window(np.random.default_rng(1), 500, 0.05, 2.5)]
    )
    drain(session_factory)
    read = auth_headers("read")
    advice = client.get("/v1/models/young/threshold-advice", headers=read).json()
    assert advice["reason"].startswith("the segment has no frozen reference yet")
    assert advice["current"] is None
    assert advice["within_capacity"] is None
    missing = client.get("/v1/models/young/threshold-advice?segment=EU", headers=read)
    assert missing.status_code == 404
    assert client.get("/v1/models/nobody/threshold-advice", headers=read).status_code == 404


def _check_calmon_advice_prints_what_the_api_gives(
    settings: Settings, api: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """`calmon advice` prints a summary (the API's numbers) or, with --json, the API's answer;
    an unknown model exits 1 with a message."""
    capsys.readouterr()
    assert cli.run(["advice", "cards", "--json"], settings) == 0
    assert json.loads(capsys.readouterr().out) == api
    assert cli.run(["advice", "cards"], settings) == 0
    printed = capsys.readouterr().out
    within = api["within_capacity"]
    assert f"within capacity: threshold {within['threshold']:.4g}" in printed
    assert "fraud rate now" in printed
    assert "(measured, window " in printed
    assert cli.run(["advice", "nobody"], settings) == 1
    assert "no model named 'nobody'" in capsys.readouterr().err


def test_a_reference_too_small_to_bootstrap_gets_a_reason_not_a_5xx(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """A reference of two rows (one fraud): most bootstrap draws lack a class (schemathesis
    found the 500 this was)."""
    register(client, auth_headers, "tiny", threshold=0.5, alert_capacity=1)
    scores, labels = np.array([0.9, 0.3]), np.array([1, 0], dtype=np.int8)
    add_windows(session_factory, "tiny", [(scores, labels), (scores, labels)])
    drain(session_factory)
    response = client.get("/v1/models/tiny/threshold-advice", headers=auth_headers("read"))
    assert response.status_code == 200, response.text
    assert response.json()["reason"].startswith("the reference is too small to advise on")
