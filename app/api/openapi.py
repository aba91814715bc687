"""The OpenAPI document: FastAPI's, completed where it cannot know.

FastAPI describes what pydantic reads and returns. It cannot know the ingestion routes' bodies
(read as raw bytes, app.api.routers.batches declares them in openapi_extra and this adds the
schemas they reference), the examples (app.api.examples, one per operation) or the meaning of
the path parameters every model route shares. Nor can it say what a newcomer needs first: the
introduction (tokens, scopes, where the manual is), the real error bodies (app.api.error_examples)
and what a verdict needs before it can come.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from app.api import examples
from app.api.error_examples import error_example
from app.schemas.ingest import DOCUMENTED_BODIES
from app.schemas.models import ModelSettings

_PARAMETERS = {
    "name": "The model's name.",
    "token_id": "The token's id (GET /v1/tokens lists them).",
    "replicates": "Bootstrap replicates of the intervals.",
}
_REF = "#/components/schemas/{model}"
_DEFAULTS = ModelSettings.model_fields

INTRODUCTION = """\
Monitoring for rare-positive binary classifiers (fraud): every precision-type metric as
measured and calibrated to a fixed reference prior, verdicts that tell a model that got worse
from a fraud rate that moved, and alerts on the former only.

**Tokens.** Every `/v1` route needs `Authorization: Bearer <token>` (the **Authorize** button
below keeps one for "Try it out"). A token is a random secret printed once by
`calmon token create --name NAME --scopes ingest,read`, run where `calmon serve` runs (or
minted by an admin with `POST /v1/tokens`); only its SHA-256 is stored. Its scopes:

- `ingest`: send predictions (`POST .../batches`) and labels (`POST .../labels`);
- `read`: read models, metrics, windows, verdicts, alerts and analyses;
- `admin`: register, change and delete models, re-anchor references, manage tokens, read the
  audit log.

A token may be limited to some models (`--models 'team-a-*'`): other models answer it 404.
No token or a revoked one is a 401, a missing scope a 403.

**Errors** all have one shape, `{"error": {"code", "message", "details"?}}`: `code` is stable,
`message` says what to change, `details` name the `field` (and the `row`, from 0) at fault.
Each error status below shows a real body.

**Before a verdict.** {verdict_needs}

**The manual** is the documentation site built from the repository's `docs/` (`mkdocs serve`):
its pages Sending data (`docs/sending-data.md`), Labels (`docs/labels.md`), Verdicts and alerts
(`docs/verdicts.md`), Metrics (`docs/metrics.md`), Security (`docs/security.md`) and API
(`docs/api.md`).
"""

VERDICT_NEEDS = (
    "A window is judged once it is mature (min_label_coverage, default "
    f"{_DEFAULTS['min_label_coverage'].default:.0%}, of its rows labelled, or label_horizon_days "
    "past its end by the model's clock) and its segment's reference is frozen: by default its "
    f"first {_DEFAULTS['reference_windows'].default} usable windows (reference_windows) holding "
    f"at least {_DEFAULTS['reference_min_positives'].default} labelled frauds "
    "(reference_min_positives). Until then the verdict is insufficient_data and the alert "
    "state warming_up."
)
"""What a verdict needs, from the model settings' defaults: said in the introduction and on
every verdict field."""

_VERDICT_FIELDS = frozenset({"verdict", "newest_judged_verdict"})


def install_openapi(app: FastAPI) -> None:
    """Make ``app.openapi()`` return the completed document (built once, then cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            document["info"]["description"] = INTRODUCTION.replace("{verdict_needs}", VERDICT_NEEDS)
            _add_body_schemas(document)
            _add_examples(document)
            _add_error_examples(document)
            _add_verdict_note(document)
            _describe_parameters(document)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented override


def _add_body_schemas(document: dict[str, Any]) -> None:
    _, schema = models_json_schema(
        [(model, "validation") for model in DOCUMENTED_BODIES], ref_template=_REF
    )
    document.setdefault("components", {}).setdefault("schemas", {}).update(schema["$defs"])


def _add_examples(document: dict[str, Any]) -> None:
    for (method, path), example in examples.RESPONSES.items():
        responses = document["paths"][path][method]["responses"]
        for status in (code for code in responses if code.startswith("2")):
            if example is None:  # /metrics: Prometheus text
                responses[status]["content"] = {
                    "text/plain": {
                        "schema": {"type": "string"},
                        "example": examples.PROMETHEUS_TEXT,
                    }
                }
            else:
                content = responses[status].setdefault("content", {})
                content.setdefault("application/json", {})["example"] = example
    for (method, path), example in examples.REQUESTS.items():
        content = document["paths"][path][method]["requestBody"]["content"]
        content["application/json"]["example"] = example


def _describe_parameters(document: dict[str, Any]) -> None:
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if "description" not in parameter and parameter["name"] in _PARAMETERS:
                    parameter["description"] = _PARAMETERS[parameter["name"]]


def _add_error_examples(document: dict[str, Any]) -> None:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                example = (
                    error_example(method, path, int(status))
                    if status.startswith(("4", "5"))
                    else None
                )
                if example is not None:
                    content = response.setdefault("content", {})
                    content.setdefault("application/json", {})["example"] = example


def _add_verdict_note(document: dict[str, Any]) -> None:
    for schema in document["components"]["schemas"].values():
        for name, field in schema.get("properties", {}).items():
            if name in _VERDICT_FIELDS:
                field["description"] = f"{field.get('description', '')} {VERDICT_NEEDS}".strip()
