"""The models API through HTTP against a real database (both backends)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.tables import MonitoredModel, Window
from tests.support.api import AuthHeaders

FRAUD: dict[str, Any] = {
    "name": "fraud-v1",
    "threshold": 0.62,
    "granularity": "day",
    "timezone": "Europe/Paris",
}


@pytest.fixture
def admin(auth_headers: AuthHeaders) -> dict[str, str]:
    return auth_headers("admin", "read")


def _register(client: TestClient, admin: dict[str, str], **changes: Any) -> dict[str, Any]:
    response = client.post("/v1/models", json={**FRAUD, **changes}, headers=admin)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def test_register_then_read_back(client: TestClient, admin: dict[str, str]) -> None:
    created = _register(client, admin)
    assert created["name"] == "fraud-v1"
    assert created["threshold"] == 0.62
    assert created["timezone"] == "Europe/Paris"
    # Defaults: historical pi0 over all history, maturity, the reference and the detector.
    assert created["pi0"] == {"policy": "historical", "lookback_windows": None}
    assert created["min_label_coverage"] == 0.8
    assert created["pi0_tolerance"] == 0.1
    assert created["alert_floor"] is None
    assert created["reference_windows"] == 14
    assert created["reference_min_positives"] == 500
    assert created["detection_drop"] == 0.3
    created_at = datetime.fromisoformat(created["created_at"])
    assert created_at.utcoffset() is not None
    assert abs((datetime.now(UTC) - created_at).total_seconds()) < 60

    fetched = client.get("/v1/models/fraud-v1", headers=admin)
    assert fetched.status_code == 200
    assert fetched.json() == created
    listed = client.get("/v1/models", headers=admin)
    assert listed.status_code == 200
    assert listed.json() == [created]


@pytest.mark.parametrize(
    "pi0",
    [
        {"policy": "historical", "lookback_windows": 28},
        {"policy": "reference", "start": "2026-01-01", "end": "2026-03-31"},
        {"policy": "fixed", "value": 0.0042},
    ],
    ids=["historical", "reference", "fixed"],
)
def test_each_pi0_policy_round_trips(
    client: TestClient, admin: dict[str, str], pi0: dict[str, Any]
) -> None:
    created = _register(client, admin, pi0=pi0)
    assert created["pi0"] == pi0
    assert client.get("/v1/models/fraud-v1", headers=admin).json()["pi0"] == pi0


def test_models_are_listed_by_name(client: TestClient, admin: dict[str, str]) -> None:
    for name in ("zeta", "alpha", "mid"):
        _register(client, admin, name=name)
    names = [m["name"] for m in client.get("/v1/models", headers=admin).json()]
    assert names == ["alpha", "mid", "zeta"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "Fraud V1"}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 65}, "name"),
        ({"threshold": "high"}, "threshold"),
        ({"threshold": None}, "threshold"),
        ({"granularity": "month"}, "granularity"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"timezone": "../../etc/passwd"}, "timezone"),
        ({"pi0": {"policy": "fixed", "value": 1.0}}, "pi0.fixed.value"),
        ({"pi0": {"policy": "fixed", "value": 0}}, "pi0.fixed.value"),
        # Below the smallest normal double every window of the model failed for good.
        ({"pi0": {"policy": "fixed", "value": 5e-324}}, "pi0.fixed.value"),
        ({"pi0": {"policy": "fixed"}}, "pi0.fixed.value"),
        ({"pi0": {"policy": "reference", "start": "2026-02-01", "end": "2026-01-01"}}, "pi0"),
        ({"pi0": {"policy": "oracle"}}, "pi0"),
        ({"pi0": {"policy": "historical", "lookback_windows": 0}}, "pi0.historical"),
        ({"min_label_coverage": 1.5}, "min_label_coverage"),
        ({"reference_windows": 0}, "reference_windows"),
        ({"reference_min_positives": 0}, "reference_min_positives"),
        ({"detection_drop": 1.0}, "detection_drop"),
        ({"detection_drop": 0}, "detection_drop"),
        # Settings of the trailing baseline that calmon no longer has are refused by name.
        ({"baseline_windows": 7}, "baseline_windows"),
        ({"min_positives": 20}, "min_positives"),
        ({"pi0_tolerance": -0.1}, "pi0_tolerance"),
        ({"alert_floor": 1.5}, "alert_floor"),
        ({"label_horizon_days": 0}, "label_horizon_days"),
        ({"label_horizon_days": 731}, "label_horizon_days"),
        ({"label_horizon_days": 1.5}, "label_horizon_days"),
        ({"alert_capacity": 0}, "alert_capacity"),
        ({"alert_capacity": 2.5}, "alert_capacity"),
        ({"alert_capacity": True}, "alert_capacity"),
        ({"review_cost": -1}, "review_cost"),
        ({"review_cost": "Infinity"}, "review_cost"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_invalid_registration_is_422_naming_the_field(
    client: TestClient, admin: dict[str, str], changes: dict[str, Any], field: str
) -> None:
    response = client.post("/v1/models", json={**FRAUD, **changes}, headers=admin)
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    fields = [detail["field"] for detail in error["details"]]
    assert any(f.startswith(field) for f in fields), fields
    assert client.get("/v1/models", headers=admin).json() == []


def test_duplicate_name_is_409_and_keeps_the_original(
    client: TestClient, admin: dict[str, str]
) -> None:
    _register(client, admin)
    response = client.post("/v1/models", json={**FRAUD, "threshold": 0.1}, headers=admin)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert client.get("/v1/models/fraud-v1", headers=admin).json()["threshold"] == 0.62


@pytest.mark.parametrize(
    ("method", "body"), [("GET", None), ("PATCH", {"threshold": 0.5})], ids=["get", "patch"]
)
def test_unknown_model_is_404(
    client: TestClient, admin: dict[str, str], method: str, body: dict[str, Any] | None
) -> None:
    response = client.request(method, "/v1/models/nobody", json=body, headers=admin)
    assert response.status_code == 404
    assert response.json()["error"] == {
        "code": "not_found",
        "message": "no model named 'nobody'",
        "model": "nobody",
    }


def _windows_of(factory: sessionmaker[Session], name: str) -> list[int]:
    with factory() as session:
        model_id = session.scalar(select(MonitoredModel.id).where(MonitoredModel.name == name))
        rows = session.scalars(
            select(Window.dirty_version)
            .where(Window.model_id == model_id)
            .order_by(Window.window_start)
        )
        return list(rows)


def _add_windows(factory: sessionmaker[Session], name: str, count: int) -> None:
    with factory.begin() as session:
        model_id = session.scalar(select(MonitoredModel.id).where(MonitoredModel.name == name))
        assert model_id is not None
        for day in range(1, count + 1):
            start = datetime(2026, 11, day, tzinfo=UTC)
            session.add(
                Window(model_id=model_id, window_start=start, dirty_version=3, computed_version=3)
            )


def test_patch_changes_fields_and_redirties_every_window(
    client: TestClient, admin: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    created = _register(client, admin)
    _add_windows(session_factory, "fraud-v1", 3)
    patch = {"threshold": 0.7, "pi0": {"policy": "fixed", "value": 0.01}, "detection_drop": 0.4}
    response = client.patch("/v1/models/fraud-v1", json=patch, headers=admin)
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["threshold"] == 0.7
    assert updated["pi0"] == {"policy": "fixed", "value": 0.01}
    assert updated["detection_drop"] == 0.4
    assert updated["granularity"] == created["granularity"]
    assert datetime.fromisoformat(updated["updated_at"]) > datetime.fromisoformat(
        created["updated_at"]
    )
    # The worker must recompute every window under the new threshold and pi0.
    assert _windows_of(session_factory, "fraud-v1") == [4, 4, 4]
    assert client.get("/v1/models/fraud-v1", headers=admin).json() == updated


def test_detector_settings_touch_only_the_newest_window(
    client: TestClient, admin: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """The floor and the detector settings apply to windows judged from now on: stored values
    do not change, so only the newest window is re-dirtied (the worker then refreshes the alert
    state); a setting that changes stored values re-dirties every window."""
    _register(client, admin)
    _add_windows(session_factory, "fraud-v1", 2)
    url = "/v1/models/fraud-v1"
    assert (
        client.patch(url, json={"alert_floor": 0.35}, headers=admin).json()["alert_floor"] == 0.35
    )
    assert (
        client.patch(url, json={"alert_floor": None}, headers=admin).json()["alert_floor"] is None
    )
    assert _windows_of(session_factory, "fraud-v1") == [3, 5]
    tuned = client.patch(url, json={"reference_windows": 28}, headers=admin).json()
    assert tuned["reference_windows"] == 28
    assert _windows_of(session_factory, "fraud-v1") == [3, 6]
    moved = client.patch(url, json={"min_label_coverage": 0.9}, headers=admin).json()
    assert moved["min_label_coverage"] == 0.9
    assert _windows_of(session_factory, "fraud-v1") == [4, 7]


def test_the_label_horizon_is_registered_changed_and_recomputes_every_window(
    client: TestClient, admin: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """It changes which windows are mature, hence stored values: every window is redone."""
    created = _register(client, admin)
    assert created["label_horizon_days"] is None  # off by default
    _add_windows(session_factory, "fraud-v1", 2)
    url = "/v1/models/fraud-v1"
    assert client.patch(url, json={"label_horizon_days": 90}, headers=admin).status_code == 200
    assert client.get(url, headers=admin).json()["label_horizon_days"] == 90
    assert _windows_of(session_factory, "fraud-v1") == [4, 4]
    off = client.patch(url, json={"label_horizon_days": None}, headers=admin).json()
    assert off["label_horizon_days"] is None
    assert _windows_of(session_factory, "fraud-v1") == [5, 5]
    spec = {**FRAUD, "name": "chargebacks-only", "label_horizon_days": 120}
    response = client.post("/v1/models", json=spec, headers=admin)
    assert response.status_code == 201, response.text
    assert response.json()["label_horizon_days"] == 120


def test_the_alert_budget_is_registered_changed_and_recomputes_every_window(
    client: TestClient, admin: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    """Capacity and review cost change stored values (precision at k, net savings)."""
    created = _register(client, admin)
    assert (created["alert_capacity"], created["review_cost"]) == (None, None)  # off
    _add_windows(session_factory, "fraud-v1", 2)
    url = "/v1/models/fraud-v1"
    changed = client.patch(url, json={"alert_capacity": 250, "review_cost": 4.5}, headers=admin)
    assert changed.status_code == 200, changed.text
    assert (changed.json()["alert_capacity"], changed.json()["review_cost"]) == (250, 4.5)
    assert _windows_of(session_factory, "fraud-v1") == [4, 4]
    off = client.patch(url, json={"alert_capacity": None}, headers=admin).json()
    assert (off["alert_capacity"], off["review_cost"]) == (None, 4.5)
    assert _windows_of(session_factory, "fraud-v1") == [5, 5]


def test_patch_without_a_change_leaves_windows_alone(
    client: TestClient, admin: dict[str, str], session_factory: sessionmaker[Session]
) -> None:
    _register(client, admin)
    _add_windows(session_factory, "fraud-v1", 2)
    response = client.patch("/v1/models/fraud-v1", json={"threshold": 0.62}, headers=admin)
    assert response.status_code == 200
    assert _windows_of(session_factory, "fraud-v1") == [3, 3]


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"granularity": "hour"}, "granularity"),
        ({"timezone": "UTC"}, "timezone"),
        ({"name": "renamed"}, "name"),
        ({"threshold": "x"}, "threshold"),
        ({"min_label_coverage": -0.1}, "min_label_coverage"),
        ({"pi0": {"policy": "fixed", "value": 2}}, "pi0.fixed.value"),
        ({"pi0": {"policy": "fixed", "value": 5e-324}}, "pi0.fixed.value"),
        ({"threshold": None}, "threshold"),
        ({"detection_drop": None}, "detection_drop"),
        ({"alert_floor": -1}, "alert_floor"),
        ({"label_horizon_days": -1}, "label_horizon_days"),
        ({"label_horizon_days": 10_000}, "label_horizon_days"),
    ],
)
def test_invalid_patch_is_422_and_changes_nothing(
    client: TestClient, admin: dict[str, str], patch: dict[str, Any], field: str
) -> None:
    created = _register(client, admin)
    response = client.patch("/v1/models/fraud-v1", json=patch, headers=admin)
    assert response.status_code == 422, response.text
    fields = [d["field"] for d in response.json()["error"]["details"]]
    assert any(f.startswith(field) for f in fields), fields
    assert client.get("/v1/models/fraud-v1", headers=admin).json() == created
