"""/docs is a newcomer's guide as well as the reference (issue 26): its introduction says what a
token is, the scopes and where to get one, and points to the docs site's pages; every error
status shows a real body instead of Swagger's placeholder; every verdict field says what a
verdict needs. The error examples are what a real server answers, word for word."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from app.api.app import create_app
from app.api.openapi import VERDICT_NEEDS
from app.monitoring.vocabulary import VERDICTS
from app.schemas.errors import ErrorBody
from app.schemas.models import ModelSettings
from app.settings import Settings
from tests.support.api import AuthHeaders
from tests.support.server import REPO_ROOT, LiveServer


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(Settings(database_url="sqlite:///unused-by-openapi.sqlite3")).openapi()


def _example(document: dict[str, Any], method: str, path: str, status: int) -> Any:
    response = document["paths"][path][method]["responses"][str(status)]
    return response["content"]["application/json"]["example"]


def test_the_introduction_says_what_a_token_is_and_where_the_manual_is(
    document: dict[str, Any],
) -> None:
    introduction = document["info"]["description"]
    assert "calmon token create" in introduction
    assert "POST /v1/tokens" in introduction
    for scope in ("ingest", "read", "admin"):
        assert f"- `{scope}`:" in introduction
    pages = re.findall(r"`(docs/[a-z-]+\.md)`", introduction)
    assert len(pages) >= 5
    assert [page for page in pages if not (REPO_ROOT / page).is_file()] == []
    assert VERDICT_NEEDS in introduction


def test_every_error_status_shows_a_real_error_body(document: dict[str, Any]) -> None:
    errors = [
        (method, path, status, response)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for status, response in operation["responses"].items()
        if status.startswith(("4", "5"))
    ]
    assert len(errors) > 100
    for method, path, status, response in errors:
        example = response["content"]["application/json"].get("example")
        assert example is not None, (method, path, status)
        ErrorBody.model_validate(example)  # the documented shape, nothing placeholder
        assert example["error"]["code"] != "string", (method, path, status)


def test_every_verdict_field_says_what_a_verdict_needs(document: dict[str, Any]) -> None:
    defaults = ModelSettings.model_fields
    assert f"first {defaults['reference_windows'].default} usable windows" in VERDICT_NEEDS
    assert f"{defaults['reference_min_positives'].default} labelled frauds" in VERDICT_NEEDS
    fields = [
        (f"{schema_name}.{name}", field)
        for schema_name, schema in document["components"]["schemas"].items()
        for name, field in schema.get("properties", {}).items()
        if set(VERDICTS)
        in [set(option.get("enum", ())) for option in [field, *field.get("anyOf", [])]]
    ]
    assert len(fields) >= 3
    assert [name for name, field in fields if VERDICT_NEEDS not in field["description"]] == []


def test_the_error_examples_are_what_a_real_server_answers(
    live_server: LiveServer, auth_headers: AuthHeaders
) -> None:
    base = live_server.base_url
    document = httpx.get(f"{base}/openapi.json").json()
    admin = auth_headers("admin", "ingest", "read")
    batches = f"{base}/v1/models/card-fraud/batches"

    def answers(method: str, path: str, status: int, response: httpx.Response) -> None:
        assert response.status_code == status, response.text
        assert response.json() == _example(document, method, path, status)

    model = {"name": "card-fraud", "threshold": 0.5}
    answers(
        "get", "/v1/models/{name}", 404, httpx.get(f"{base}/v1/models/card-fraud", headers=admin)
    )
    assert httpx.post(f"{base}/v1/models", json=model, headers=admin).status_code == 201
    answers("post", "/v1/models", 409, httpx.post(f"{base}/v1/models", json=model, headers=admin))
    unknown = {"Authorization": "Bearer not-a-token"}
    answers("get", "/v1/models", 401, httpx.get(f"{base}/v1/models", headers=unknown))
    reader = auth_headers("read", name="dashboard")
    answers("post", "/v1/models", 403, httpx.post(f"{base}/v1/models", json=model, headers=reader))
    plain = {**admin, "Content-Type": "text/plain"}
    answers(
        "post", "/v1/models/{name}/batches", 415, httpx.post(batches, content=b"x", headers=plain)
    )

    rows = [
        {"id": "tx-1", "timestamp": "2026-11-01T10:00:00Z", "score": 0.9, "label": 1},
        {"id": "tx-2", "timestamp": "2026-11-01T10:00:05Z", "score": 0.1, "label": 2},
        {"id": "tx-3", "timestamp": "2026-11-01T10:00:09Z", "score": "NaN", "label": 0},
    ]
    refused = httpx.post(batches, json={"batch_id": "b", "rows": rows}, headers=admin)
    answers("post", "/v1/models/{name}/batches", 422, refused)
    stored = [rows[0]]
    batch = {"batch_id": "2026-11-01T10", "rows": stored}
    assert httpx.post(batches, json=batch, headers=admin).status_code == 201
    other = {"batch_id": "2026-11-01T10", "rows": [{**rows[0], "score": 0.8}]}
    answers(
        "post", "/v1/models/{name}/batches", 409, httpx.post(batches, json=other, headers=admin)
    )
    labels = httpx.post(
        f"{base}/v1/models/card-fraud/labels",
        json={"labels": [{"id": "tx-1", "label": None}]},
        headers=admin,
    )
    answers("post", "/v1/models/{name}/labels", 422, labels)
    answers(
        "delete",
        "/v1/tokens/{token_id}",
        404,
        httpx.delete(f"{base}/v1/tokens/7", headers=admin),
    )
    invalid = httpx.get(
        f"{base}/v1/models/card-fraud/metrics", params={"from": "2026-11"}, headers=admin
    )
    answers("get", "/v1/models/{name}/metrics", 422, invalid)
