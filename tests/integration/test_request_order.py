"""Who is asked first, and what is accepted (issue 16, finding 7): authentication before the
body, no boolean for a number, CSV labels as pandas writes them, no token in the access log."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.tables import Prediction
from tests.support.api import AuthHeaders
from tests.support.server import LiveServer
from tests.support.waiting import wait_for

MODEL = {"name": "fraud-v1", "threshold": 0.5}
MALFORMED = b'{"name": "fraud-v1", "threshold": '


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic abc"}],
    ids=["no_token", "unknown_token", "not_bearer"],
)
@pytest.mark.parametrize(
    ("method", "url"),
    [("POST", "/v1/models"), ("PATCH", "/v1/models/fraud-v1"), ("POST", "/v1/tokens")],
)
def test_a_malformed_body_without_valid_credentials_is_401(
    client: TestClient, headers: dict[str, str], method: str, url: str
) -> None:
    response = client.request(
        method, url, content=MALFORMED, headers={**headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "not_authenticated"


def test_a_malformed_body_with_the_wrong_scope_is_403(
    client: TestClient, auth_headers: AuthHeaders
) -> None:
    response = client.post(
        "/v1/models",
        content=MALFORMED,
        headers={**auth_headers("read"), "Content-Type": "application/json"},
    )
    assert response.status_code == 403, response.text


def test_a_malformed_body_with_a_valid_token_is_still_422(
    client: TestClient, auth_headers: AuthHeaders
) -> None:
    response = client.post(
        "/v1/models",
        content=MALFORMED,
        headers={**auth_headers("admin"), "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text


@pytest.mark.parametrize("flag", [False, True])
def test_a_boolean_threshold_is_refused(
    client: TestClient, auth_headers: AuthHeaders, flag: bool
) -> None:
    admin = auth_headers("admin")
    created = client.post("/v1/models", json={**MODEL, "threshold": flag}, headers=admin)
    assert created.status_code == 422, created.text
    assert created.json()["error"]["details"][0]["field"] == "threshold"
    assert client.post("/v1/models", json=MODEL, headers=admin).status_code == 201
    patched = client.patch("/v1/models/fraud-v1", json={"threshold": flag}, headers=admin)
    assert patched.status_code == 422, patched.text
    fixed = {"pi0": {"policy": "fixed", "value": flag}}
    assert client.patch("/v1/models/fraud-v1", json=fixed, headers=admin).status_code == 422


def test_csv_labels_written_as_floats_are_accepted(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    headers = auth_headers("admin", "ingest")
    assert client.post("/v1/models", json=MODEL, headers=headers).status_code == 201
    body = (
        "id,timestamp,score,label\n"
        "a,2026-11-02T10:00:00Z,0.9,1.0\n"
        "b,2026-11-02T10:00:01Z,0.1,0.0\n"
        "c,2026-11-02T10:00:02Z,0.2,\n"
    )
    response = client.post(
        "/v1/models/fraud-v1/batches?batch_id=pandas",
        content=body.encode(),
        headers={**headers, "Content-Type": "text/csv"},
    )
    assert response.status_code == 201, response.text
    with session_factory() as session:
        stored = dict(session.execute(select(Prediction.prediction_id, Prediction.label)).all())
    assert stored == {"a": 1, "b": 0, "c": None}


def test_a_token_in_the_query_string_never_reaches_the_access_log(
    live_server: LiveServer,
) -> None:
    secret = "calmon_SECRETVALUE123"
    with httpx.Client(base_url=live_server.base_url) as http:
        response = http.get("/v1/models", params={"token": secret, "segment": "FR"})
        assert response.status_code == 401
        marker = http.get("/healthz", params={"after": "token-request"})
        assert marker.status_code == 200
    # The access log is on and was flushed.
    logs = wait_for(
        lambda: text if "token-request" in (text := live_server.logs()) else None,
        "the marker request in the access log",
        timeout=5,
        poll=0.05,
    )
    assert secret not in logs
    assert "/v1/models?" in logs
