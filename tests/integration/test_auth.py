"""Bearer-token auth: 401 vs 403, revocation, hashing at rest, the CLI, and open probes."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app import cli
from app.api.app import create_app
from app.db.tables import ApiToken
from app.services.tokens import hash_token
from tests.support.api import AuthHeaders
from tests.support.databases import settings_for
from tests.support.server import REPO_ROOT, LiveServer, clean_environment

MODEL = {"name": "fraud", "threshold": 0.5}


def _assert_401(response: httpx.Response, *, invalid_token: bool) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "not_authenticated"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert ('error="invalid_token"' in challenge) is invalid_token


def test_missing_token_is_401_with_a_challenge(client: TestClient) -> None:
    _assert_401(client.get("/v1/models"), invalid_token=False)
    _assert_401(client.post("/v1/models", json=MODEL), invalid_token=False)


@pytest.mark.parametrize(
    "header", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer    ", "calmon_abc"], ids=repr
)
def test_malformed_authorization_is_401(client: TestClient, header: str) -> None:
    _assert_401(client.get("/v1/models", headers={"Authorization": header}), invalid_token=False)


def test_unknown_token_is_401_invalid_token(
    client: TestClient, make_token: Callable[..., str]
) -> None:
    real = make_token("read")
    forged = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    response = client.get("/v1/models", headers={"Authorization": f"Bearer {forged}"})
    _assert_401(response, invalid_token=True)


@pytest.mark.parametrize(
    ("scopes", "call", "needed"),
    [
        (("read",), "POST /v1/models", "admin"),
        (("ingest",), "GET /v1/models", "read"),
        (("ingest", "read"), "PATCH /v1/models/fraud", "admin"),
        (("admin",), "GET /v1/models/fraud", "read"),
        (("read",), "GET /v1/tokens", "admin"),
    ],
)
def test_valid_token_without_the_scope_is_403(
    client: TestClient,
    auth_headers: AuthHeaders,
    scopes: tuple[str, ...],
    call: str,
    needed: str,
) -> None:
    method, path = call.split(" ")
    assert client.post("/v1/models", json=MODEL, headers=auth_headers("admin")).status_code == 201
    body = MODEL if method == "POST" else {"threshold": 0.4} if method == "PATCH" else None
    response = client.request(method, path, json=body, headers=auth_headers(*scopes))
    assert response.status_code == 403, response.text
    assert response.json()["error"]["required_scope"] == needed
    assert "www-authenticate" not in response.headers


def test_revoked_token_is_401_from_the_next_request_on(
    client: TestClient, auth_headers: AuthHeaders
) -> None:
    admin = auth_headers("admin")
    created = client.post("/v1/tokens", json={"name": "ci", "scopes": ["read"]}, headers=admin)
    assert created.status_code == 201
    token = created.json()
    reader = {"Authorization": f"Bearer {token['token']}"}
    assert client.get("/v1/models", headers=reader).status_code == 200

    revoked = client.delete(f"/v1/tokens/{token['id']}", headers=admin)
    assert revoked.status_code == 200
    assert revoked.json()["revoked_at"] is not None
    _assert_401(client.get("/v1/models", headers=reader), invalid_token=True)
    listed = client.get("/v1/tokens", headers=admin).json()
    assert "token" not in listed[-1]
    assert listed[-1]["revoked_at"] is not None


def test_tokens_are_stored_hashed(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    response = client.post(
        "/v1/tokens", json={"name": "s", "scopes": ["ingest"]}, headers=auth_headers("admin")
    )
    secret = response.json()["token"]
    with session_factory() as session:
        row = session.scalars(select(ApiToken).where(ApiToken.name == "s")).one()
    assert row.hash == hash_token(secret)
    stored = " ".join(str(v) for v in (row.name, row.prefix, row.hash, row.scopes))
    assert secret not in stored
    # The random part follows the two fixed fields; it may itself contain "_".
    assert secret.split("_", 2)[-1] not in stored


def test_health_probes_need_no_token(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"


def test_readyz_is_503_on_an_unmigrated_database(empty_database_url: str) -> None:
    with TestClient(create_app(settings_for(empty_database_url))) as client:
        assert client.get("/healthz").status_code == 200
        response = client.get("/readyz")
    assert response.status_code == 503
    assert "calmon migrate" in response.json()["error"]["message"]


def test_auth_disabled_accepts_anonymous_requests_and_warns(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(database_url, auth_disabled=True)
    with caplog.at_level(logging.WARNING), TestClient(create_app(settings)) as client:
        assert client.post("/v1/models", json=MODEL).status_code == 201
        assert client.get("/v1/models").status_code == 200
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any(r.getMessage() == "auth_disabled" for r in warnings)


def _calmon(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=REPO_ROOT,
        env=clean_environment({"CALMON_DATABASE_URL": database_url}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_token_lifecycle_against_a_live_server(
    live_server: LiveServer, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`calmon token create` prints the token once; a real server accepts it until revoked."""
    created = _calmon(database_url, "token", "create", "--name", "ops", "--scopes", "read,ingest")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("calmon_")
    assert "shown only this once" in created.stderr
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{live_server.base_url}/v1/models", headers=headers).status_code == 200
    refused = httpx.post(f"{live_server.base_url}/v1/models", json=MODEL, headers=headers)
    assert refused.status_code == 403

    settings = settings_for(database_url)
    assert cli.run(["token", "list"], settings) == 0
    listed = capsys.readouterr().out
    tokens = [json.loads(line) for line in listed.splitlines()]
    assert [(t["name"], t["scopes"]) for t in tokens] == [("ops", ["ingest", "read"])]
    assert token not in listed

    assert cli.run(["token", "revoke", str(tokens[0]["id"])], settings) == 0
    after = httpx.get(f"{live_server.base_url}/v1/models", headers=headers)
    assert after.status_code == 401
    assert cli.run(["token", "revoke", "999999"], settings) == 1
    assert "no token with id 999999" in capsys.readouterr().err


def test_cli_refuses_unknown_scopes(database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    settings = settings_for(database_url)
    with pytest.raises(SystemExit) as exit_info:
        cli.run(["token", "create", "--name", "x", "--scopes", "read,root"], settings)
    assert exit_info.value.code == 2
    assert "scopes" in capsys.readouterr().err


def test_cli_token_on_a_fresh_database(
    empty_database_url: str, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing embedded database is migrated before minting; a missing SQLite file is not
    created (it would be a new, empty database beside the one the server uses); PostgreSQL
    says to run `calmon migrate`."""
    settings = settings_for(empty_database_url, migrate_on_start=None)
    code = cli.run(["token", "create", "--name", "first", "--scopes", "admin"], settings)
    captured = capsys.readouterr()
    assert code == 1
    if backend == "postgresql":
        assert "run `calmon migrate`" in captured.err
        return
    path = Path(empty_database_url.removeprefix("sqlite:///"))
    assert f"no calmon database at {path}" in captured.err
    assert not path.exists()
    path.touch()  # an empty SQLite database, as `calmon serve` leaves it before migrating
    code = cli.run(["token", "create", "--name", "first", "--scopes", "admin"], settings)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith("calmon_")
