"""The drop detector through the worker and the API (both backends): it pages on a lasting drop,
keeps issued verdicts through a pi0 move, and is re-anchored only by an explicit act.

Windows go straight into the database and a worker drains them in-process
(tests/support/worker_data.py); the e2e tests post streams over HTTP to real processes.
"""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import AlertStateRow, WindowMetrics
from app.db.repositories.monitoring import MonitoringRepository
from app.windows import judging
from tests.support.api import AuthHeaders, get_json
from tests.support.streams import day_start, gaussian_window
from tests.support.worker_data import drain, find_model_id, insert_rows

ROWS, PI = 4_000, 0.05  # 200 positives a day
HEALTHY, DEGRADED = 2.0, 1.0


def _day(sf: sessionmaker[Session], model_id: int, day: int, mu: float) -> None:
    scores, labels = gaussian_window(np.random.default_rng([7, day]), ROWS, PI, mu)
    insert_rows(sf, model_id, day_start(day), scores, labels, prefix=f"d{day}")


def _verdicts(client: TestClient, read: dict[str, str]) -> list[str]:
    points = get_json(client, read, "/v1/models/fraud/metrics")["points"]
    return [p["verdict"] for p in points]


def test_pages_keeps_verdicts_and_re_anchors_only_on_request(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin, read = auth_headers("admin"), auth_headers("read")
    body = {
        "name": "fraud",
        "threshold": 1.5,
        "reference_windows": 5,
        "reference_min_positives": 100,
    }
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    model_id = find_model_id(session_factory, "fraud")
    for day in range(10):
        _day(session_factory, model_id, day, HEALTHY if day < 5 else DEGRADED)
    drain(session_factory)

    # Days 0-4 are the reference; the drop from day 5 on pages and stays paged.
    verdicts = _verdicts(client, read)
    assert verdicts[:5] == ["reference"] * 5
    first = verdicts.index("performance_drop")
    assert first <= 7
    assert set(verdicts[first:]) == {"performance_drop"}
    alerts = get_json(client, read, "/v1/models/fraud/alerts")
    assert alerts["state"] == "drop"
    assert alerts["segments"][0]["signals"] == ["cusum"]
    assert alerts["segments"][0]["episode_start"].startswith(f"2026-01-0{first + 1}")

    # A new pi0 version recomputes every value but re-judges nothing.
    before = get_json(client, read, "/v1/models/fraud/metrics")["points"]
    patch = {"pi0": {"policy": "fixed", "value": 0.02}}
    assert client.patch("/v1/models/fraud", json=patch, headers=admin).status_code == 200
    drain(session_factory)
    after = get_json(client, read, "/v1/models/fraud/metrics")["points"]
    assert [p["pi0"] for p in after] == [0.02] * 10
    assert [p["calibrated"] for p in after] != [p["calibrated"] for p in before]
    assert [p["verdict"] for p in after] == [p["verdict"] for p in before]
    assert [p["reason"] for p in after[5:]] == [p["reason"] for p in before[5:]]

    # "Accept the current state as normal": a new reference of the newest usable windows. The
    # page clears; the windows judged before keep their verdicts.
    response = client.post("/v1/models/fraud/reference", json={"kind": "recent"}, headers=admin)
    assert response.status_code == 201, response.text
    assert response.json()["current"]["version"] == 2
    drain(session_factory)
    alerts = get_json(client, read, "/v1/models/fraud/alerts")
    assert alerts["state"] == "ok"
    assert alerts["segments"][0]["reference_version"] == 2
    assert _verdicts(client, read) == [p["verdict"] for p in after]
    reference = get_json(client, read, "/v1/models/fraud/reference")
    whole = next(s for s in reference["segments"] if s["segment"] == "all")
    assert whole["ready"]
    assert whole["first_window"].startswith("2026-01-06")
    assert whole["last_window"].startswith("2026-01-10")
    assert [v["kind"] for v in reference["versions"]] == ["automatic", "recent"]

    # The degraded state is normal now: another such day is stable against it.
    _day(session_factory, model_id, 10, DEGRADED)
    drain(session_factory)
    assert _verdicts(client, read)[10] == "stable"
    assert get_json(client, read, "/v1/models/fraud/alerts")["state"] == "ok"

    # Back to the original period (after a retrain, say): judged against it from now on.
    period = {"kind": "period", "start": "2026-01-01", "end": "2026-01-05"}
    assert client.post("/v1/models/fraud/reference", json=period, headers=admin).status_code == 201
    for day in (11, 12, 13):
        _day(session_factory, model_id, day, DEGRADED)
    drain(session_factory)
    verdicts = _verdicts(client, read)
    assert verdicts[10] == "stable"  # issued under version 2, kept
    assert "performance_drop" in verdicts[11:]
    assert (
        get_json(client, read, "/v1/models/fraud/alerts")["segments"][0]["reference_version"] == 3
    )


def test_reference_requests_are_checked(client: TestClient, auth_headers: AuthHeaders) -> None:
    admin = auth_headers("admin")
    created = client.post("/v1/models", json={"name": "m", "threshold": 0.5}, headers=admin)
    assert created.status_code == 201
    url = "/v1/models/m/reference"
    backwards = {"kind": "period", "start": "2026-02-01", "end": "2026-01-01"}
    for bad in ({"kind": "oracle"}, {"kind": "period", "start": "2026-01-01"}, backwards):
        response = client.post(url, json=bad, headers=admin)
        assert response.status_code == 422, response.text
    read_only = client.post(url, json={"kind": "recent"}, headers=auth_headers("read"))
    assert read_only.status_code == 403
    missing = client.post("/v1/models/nope/reference", json={"kind": "recent"}, headers=admin)
    assert missing.status_code == 404
    fresh = get_json(client, auth_headers("read"), url)
    assert fresh["current"]["version"] == 1
    assert fresh["segments"] == []
    alerts = get_json(client, auth_headers("read"), "/v1/models/m/alerts")
    assert alerts == {"model": "m", "state": "warming_up", "segments": []}


def test_a_long_backlog_is_judged_over_several_passes(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pass judges a bounded number of windows: the first pass after the upgrade to the
    detector finds every stored window unjudged (years of them, for some models). It schedules
    the next pass itself, so one re-dirtied window is enough for the whole backlog."""
    monkeypatch.setattr(judging, "JUDGEMENTS_PER_PASS", 2)
    admin, read = auth_headers("admin"), auth_headers("read")
    body = {"name": "fraud", "threshold": 1.5, "reference_windows": 3}
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    model_id = find_model_id(session_factory, "fraud")
    for day in range(9):
        _day(session_factory, model_id, day, HEALTHY)
    drain(session_factory)
    # As migration 0004 leaves a deployment: stored windows without a verdict, no alert state.
    with session_factory.begin() as session:
        session.execute(
            update(WindowMetrics)
            .where(WindowMetrics.verdict != "reference")
            .values(judged_at=None, verdict="insufficient_data", evidence=None)
        )
        session.execute(delete(AlertStateRow))
        MonitoringRepository(session).touch_newest_window(model_id)
    drain(session_factory)
    points = get_json(client, read, "/v1/models/fraud/metrics")["points"]
    assert [p["verdict"] for p in points[:3]] == ["reference"] * 3
    assert all(p["judged"] for p in points), [p["verdict"] for p in points]
    whole = get_json(client, read, "/v1/models/fraud/alerts")["segments"][0]
    assert whole["evidence_windows"] == 6
    assert whole["newest_judged_window"].startswith("2026-01-09")
