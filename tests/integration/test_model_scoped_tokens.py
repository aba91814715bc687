"""Tokens limited to some models: one team's token cannot touch, read or learn of another's.

The route walk reads the OpenAPI document, so a route added later is held to the check without
anyone remembering to list it here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app import cli
from app.db.tables import Prediction
from app.settings import Settings
from tests.support.api import AuthHeaders

MINE, THEIRS, GHOST = "team-a-card", "team-b-card", "team-b-ghost"
ALL_SCOPES = ("admin", "ingest", "read")
# Every path parameter a route may have, and what the walk sends for it. A new parameter
# fails the walk until someone decides here whether it names a model.
PATH_VALUES = {"name": None, "window_start": "2026-01-01T00:00:00Z", "token_id": "1"}
BATCH: dict[str, Any] = {
    "batch_id": "b-1",
    "rows": [
        {"id": "t-1", "timestamp": "2026-01-01T10:00:00Z", "score": 0.9, "label": 1},
        {"id": "t-2", "timestamp": "2026-01-01T11:00:00Z", "score": 0.1, "label": 0},
    ],
}


@pytest.fixture
def two_teams(client: TestClient, auth_headers: AuthHeaders) -> dict[str, str]:
    """Two models of two teams, each with one batch; global admin headers."""
    admin = auth_headers(*ALL_SCOPES, name="global")
    for name in (MINE, THEIRS):
        assert (
            client.post(
                "/v1/models", json={"name": name, "threshold": 0.5}, headers=admin
            ).status_code
            == 201
        )
        posted = client.post(f"/v1/models/{name}/batches", json=BATCH, headers=admin)
        assert posted.status_code == 201, posted.text
    return admin


def _model_routes(client: TestClient) -> list[tuple[str, str]]:
    routes = []
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        parameters = re.findall(r"{(\w+)}", path)
        assert set(parameters) <= set(PATH_VALUES), (path, "a new path parameter: see PATH_VALUES")
        if path.startswith("/v1/models/"):
            # A route under a model names it `name`: the one parameter the check reads.
            assert path.split("/")[3] == "{name}", path
        if "name" in parameters:
            routes += [(method.upper(), path) for method in operations]
    return routes


def _url(path: str, model: str) -> str:
    values = {**PATH_VALUES, "name": model}
    return re.sub(r"{(\w+)}", lambda m: str(values[m.group(1)]), path)


def test_every_route_naming_a_model_answers_another_teams_token_as_for_no_model(
    client: TestClient, two_teams: dict[str, str], auth_headers: AuthHeaders
) -> None:
    team_a = auth_headers(*ALL_SCOPES, name="team-a", models=["team-a-*"])
    routes = _model_routes(client)
    assert len(routes) >= 15, routes  # the walk really walks
    for method, path in routes:
        # A body that would be a 422 anywhere: the model check must come first.
        headers = {**team_a, "content-type": "application/json"}
        theirs = client.request(method, _url(path, THEIRS), content=b"{not", headers=headers)
        ghost = client.request(method, _url(path, GHOST), content=b"{not", headers=headers)
        assert theirs.status_code == 404, (method, path, theirs.text)
        error = theirs.json()["error"]
        assert error == {
            "code": "not_found",
            "message": f"no model named {THEIRS!r}",
            "model": THEIRS,
        }
        # Exactly what a model that does not exist gets: nothing says the other one is there.
        assert ghost.status_code == 404, (method, path, ghost.text)
        assert ghost.text.replace(GHOST, THEIRS) == theirs.text, (method, path)
    # The control: the same token reaches its own model (the walk can fail).
    assert client.get(f"/v1/models/{MINE}", headers=team_a).status_code == 200
    mine = client.get(f"/v1/models/{MINE}/metrics", headers=team_a)
    assert mine.status_code == 200, mine.text


def test_another_teams_ingest_token_writes_nothing(
    client: TestClient,
    two_teams: dict[str, str],
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
) -> None:
    team_a = auth_headers("ingest", name="team-a-scorer", models=[MINE])
    overwrite = {"batch_id": "b-2", "rows": [{**BATCH["rows"][0], "score": 0.0, "label": 0}]}
    assert (
        client.post(f"/v1/models/{THEIRS}/batches", json=overwrite, headers=team_a).status_code
        == 404
    )
    flip = {"labels": [{"id": "t-1", "label": 0}]}
    assert client.post(f"/v1/models/{THEIRS}/labels", json=flip, headers=team_a).status_code == 404
    with session_factory() as session:
        rows = session.execute(
            select(Prediction.score, Prediction.label).where(Prediction.prediction_id == "t-1")
        ).all()
    assert sorted(rows) == [(0.9, 1), (0.9, 1)]  # both teams' t-1, untouched


def test_listings_show_the_tokens_models_only(
    client: TestClient, two_teams: dict[str, str], auth_headers: AuthHeaders
) -> None:
    scoped = auth_headers("read", models=["team-a-*"])
    assert [m["name"] for m in client.get("/v1/models", headers=scoped).json()] == [MINE]
    everything = client.get("/v1/models", headers=two_teams).json()
    assert sorted(m["name"] for m in everything) == [MINE, THEIRS]
    compare = client.get(
        f"/v1/models/{MINE}/compare", params={"challenger": THEIRS}, headers=scoped
    )
    assert compare.status_code == 404, compare.text
    assert compare.json()["error"]["message"] == f"no model named {THEIRS!r}"


def test_an_admin_of_some_models_administers_those_only(
    client: TestClient, two_teams: dict[str, str], auth_headers: AuthHeaders
) -> None:
    admin_a = auth_headers("admin", "read", name="team-a-admin", models=["team-a-*"])
    new = client.post("/v1/models", json={"name": "team-a-web", "threshold": 0.5}, headers=admin_a)
    assert new.status_code == 201, new.text
    outside = client.post(
        "/v1/models", json={"name": "team-b-web", "threshold": 0.5}, headers=admin_a
    )
    assert outside.status_code == 403, outside.text
    # 403 whether or not the name is taken: it says nothing about the other team.
    taken = client.post("/v1/models", json={"name": THEIRS, "threshold": 0.5}, headers=admin_a)
    assert (taken.status_code, taken.json()) == (403, outside.json())
    assert (
        client.patch(f"/v1/models/{MINE}", json={"threshold": 0.4}, headers=admin_a).status_code
        == 200
    )
    assert client.delete(f"/v1/models/{THEIRS}", headers=admin_a).status_code == 404

    def mint(**body: object) -> tuple[int, dict[str, object]]:
        response = client.post(
            "/v1/tokens", json={"name": "t", "scopes": ["read"], **body}, headers=admin_a
        )
        return response.status_code, response.json()

    assert mint(models=["team-a-web"])[0] == 201
    assert mint(models=["team-a-x*"])[0] == 201
    assert mint(models=["team-b-card"])[0] == 403
    assert mint(models=["team-*"])[0] == 403  # wider than its own
    status, inherited = mint()
    assert (status, inherited["models"]) == (201, ["team-a-*"])
    listed = client.get("/v1/tokens", headers=admin_a).json()
    assert {t["name"] for t in listed} == {"t", "team-a-admin"}
    everyone = client.get("/v1/tokens", headers=two_teams).json()
    global_id = next(t["id"] for t in everyone if t["name"] == "global")
    assert client.delete(f"/v1/tokens/{global_id}", headers=admin_a).status_code == 404
    own = next(t["id"] for t in listed if t["name"] == "t")
    assert client.delete(f"/v1/tokens/{own}", headers=admin_a).status_code == 200


@pytest.mark.parametrize("models", [[], ["Team A"], ["*"], ["a,b"], ["a*b"]], ids=repr)
def test_a_models_list_that_is_no_set_of_models_is_refused(
    client: TestClient, auth_headers: AuthHeaders, models: list[str]
) -> None:
    body = {"name": "t", "scopes": ["read"], "models": models}
    response = client.post("/v1/tokens", json=body, headers=auth_headers("admin"))
    assert response.status_code == 422, response.text
    assert response.json()["error"]["details"][0]["field"].startswith("models")


def test_the_command_line_mints_a_token_for_some_models(
    settings: Settings,
    client: TestClient,
    two_teams: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        cli.run(
            ["token", "create", "--name", "a", "--scopes", "read", "--models", "team-a-*"], settings
        )
        == 0
    )
    printed = capsys.readouterr()
    token = printed.out.strip()
    assert "models team-a-*" in printed.err
    listed = client.get("/v1/models", headers={"Authorization": f"Bearer {token}"}).json()
    assert [m["name"] for m in listed] == [MINE]
    with pytest.raises(SystemExit):
        cli.run(["token", "create", "--name", "b", "--scopes", "read", "--models", ""], settings)
    assert "model names or prefixes" in capsys.readouterr().err


def test_tokens_without_models_see_every_model(
    make_token: Callable[..., str], client: TestClient, two_teams: dict[str, str]
) -> None:
    token = make_token("read")
    listed = client.get("/v1/models", headers={"Authorization": f"Bearer {token}"}).json()
    assert sorted(m["name"] for m in listed) == [MINE, THEIRS]
    tokens = client.get("/v1/tokens", headers=two_teams).json()
    assert all(t["models"] is None for t in tokens)


def test_admin_acts_are_in_the_audit_log_without_secrets(
    client: TestClient,
    two_teams: dict[str, str],
    auth_headers: AuthHeaders,
    settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    admin_a = auth_headers("admin", "read", name="team-a-admin", models=["team-a-*"])
    assert (
        client.patch(f"/v1/models/{MINE}", json={"threshold": 0.4}, headers=admin_a).status_code
        == 200
    )
    minted = client.post("/v1/tokens", json={"name": "feed", "scopes": ["ingest"]}, headers=admin_a)
    secret = minted.json()["token"]
    assert client.delete(f"/v1/tokens/{minted.json()['id']}", headers=admin_a).status_code == 200
    assert client.delete(f"/v1/models/{THEIRS}", headers=two_teams).status_code == 200
    assert cli.run(["token", "create", "--name", "cli", "--scopes", "read"], settings) == 0
    cli_secret = capsys.readouterr().out.strip()

    everything = client.get("/v1/audit", headers=two_teams)
    assert everything.status_code == 200, everything.text
    acts = [(e["actor"], e["action"], e["model"]) for e in everything.json()]
    assert acts == [
        ("command line", "token.created", None),
        ("global", "model.deleted", THEIRS),
        ("team-a-admin", "token.revoked", None),
        ("team-a-admin", "token.created", None),
        ("team-a-admin", "model.changed", MINE),
        ("global", "model.created", THEIRS),
        ("global", "model.created", MINE),
    ]
    changed = everything.json()[4]
    assert changed["detail"] == {"threshold": {"before": 0.5, "after": 0.4}}
    assert everything.json()[3]["detail"]["models"] == ["team-a-*"]
    assert secret not in everything.text
    assert cli_secret not in everything.text
    # The admin of team a sees the acts on its models and tokens, not team b's nor global ones.
    own = client.get("/v1/audit", headers=admin_a).json()
    assert [(e["action"], e["model"]) for e in own] == [
        ("token.revoked", None),
        ("token.created", None),
        ("model.changed", MINE),
        ("model.created", MINE),
    ]
    paged = client.get("/v1/audit", params={"limit": 2, "before": own[1]["id"]}, headers=admin_a)
    assert [e["id"] for e in paged.json()] == [own[2]["id"], own[3]["id"]]
    hidden = client.get("/v1/audit", params={"model": THEIRS}, headers=admin_a)
    assert hidden.status_code == 404, hidden.text
    assert client.get("/v1/audit", headers=auth_headers("read")).status_code == 403
