"""The OpenAPI document: FastAPI's, completed where it cannot know.

FastAPI describes what pydantic reads and returns. It cannot know the ingestion routes' bodies
(read as raw bytes, app.api.routers.batches declares them in openapi_extra and this adds the
schemas they reference), the examples (app.api.examples, one per operation) or the meaning of
the path parameters every model route shares.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from app.api import examples
from app.schemas.ingest import DOCUMENTED_BODIES

_PARAMETERS = {
    "name": "The model's name.",
    "token_id": "The token's id (GET /v1/tokens lists them).",
    "replicates": "Bootstrap replicates of the intervals.",
}
_REF = "#/components/schemas/{model}"


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
            _add_body_schemas(document)
            _add_examples(document)
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
