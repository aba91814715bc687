"""The OpenAPI document is complete enough for /docs to be the manual (issue 13): request
bodies of every format, the real response schemas, calmon's error body for every error status,
the closed sets as enums, a description on every field and an example per operation; and the
documented examples are true (they validate, and a real server accepts the ingestion ones)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import TypeAdapter

from app.api import examples
from app.api.app import ROUTER_MODULES, create_app
from app.metrics import METRIC_NAMES
from app.monitoring.vocabulary import (
    ALERT_STATES,
    GRANULARITIES,
    PI0_POLICIES,
    REFERENCE_KINDS,
    SIGNALS,
    VERDICTS,
)
from app.observability import prometheus
from app.schemas.tokens import SCOPES
from app.settings import Settings
from tests.support.api import AuthHeaders
from tests.support.server import LiveServer


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(Settings(database_url="sqlite:///unused-by-openapi.sqlite3"))


@pytest.fixture(scope="module")
def document(app: FastAPI) -> dict[str, Any]:
    return app.openapi()


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            yield method, path, operation


def _properties(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, schema in document["components"]["schemas"].items():
        for field, prop in schema.get("properties", {}).items():
            yield f"{name}.{field}", prop


def test_every_field_and_parameter_has_a_description(document: dict[str, Any]) -> None:
    fields = dict(_properties(document))
    assert len(fields) > 250
    assert [name for name, prop in fields.items() if not prop.get("description")] == []
    parameters = [
        f"{method} {path} {parameter['name']}"
        for method, path, operation in _operations(document)
        for parameter in operation.get("parameters", [])
        if not parameter.get("description")
    ]
    assert parameters == []


def test_errors_are_documented_as_calmons_error_body(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert "ValidationError" not in schemas
    for method, path, operation in _operations(document):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)
    ingest = document["paths"]["/v1/models/{name}/batches"]["post"]["responses"]
    assert {"401", "403", "404", "409", "413", "415", "422", "503"} <= set(ingest)


def _enum(prop: dict[str, Any]) -> list[str]:
    """The enum of a property, through a nullable anyOf, an array or a $ref'd enum."""
    if "enum" in prop:
        return list(prop["enum"])
    if "items" in prop:
        return _enum(prop["items"])
    for option in prop.get("anyOf", []):
        if option.get("type") != "null":
            return _enum(option)
    raise AssertionError(f"no enum in {prop}")


def test_closed_sets_are_enums(document: dict[str, Any]) -> None:
    fields = dict(_properties(document))
    assert _enum(fields["MetricPoint.verdict"]) == list(VERDICTS)
    assert _enum(fields["WindowDetail.verdict"]) == list(VERDICTS)
    assert _enum(fields["SegmentAlertOut.newest_judged_verdict"]) == list(VERDICTS)
    assert _enum(fields["MetricSeries.metric"]) == list(METRIC_NAMES)
    assert fields["WindowDetail.metrics"]["propertyNames"]["enum"] == list(METRIC_NAMES)
    assert _enum(fields["ModelOut.granularity"]) == list(GRANULARITIES)
    assert _enum(fields["ModelCreate.granularity"]) == list(GRANULARITIES)
    assert _enum(fields["AlertsOut.state"]) == list(ALERT_STATES)
    assert _enum(fields["SegmentAlertOut.state"]) == list(ALERT_STATES)
    assert _enum(fields["SegmentAlertOut.signals"]) == list(SIGNALS)
    assert _enum(fields["TokenCreate.scopes"]) == list(SCOPES)
    assert _enum(fields["Pi0Out.policy"]) == list(PI0_POLICIES)
    assert _enum(fields["ReferenceVersionOut.kind"]) == list(REFERENCE_KINDS)
    series = document["paths"]["/v1/models/{name}/metrics"]["get"]["parameters"]
    metric = next(p for p in series if p["name"] == "metric")
    assert metric["schema"]["enum"] == list(METRIC_NAMES)


def test_ingestion_bodies_and_responses_are_documented(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    batches = document["paths"]["/v1/models/{name}/batches"]["post"]
    content = batches["requestBody"]["content"]
    assert set(content) == {"application/json", "text/csv"}
    assert content["application/json"]["schema"]["oneOf"] == [
        {"$ref": "#/components/schemas/RowBatch"},
        {"$ref": "#/components/schemas/ColumnarBatch"},
    ]
    assert {"RowBatch", "ColumnarBatch", "PredictionRow", "LabelUpdate"} <= set(schemas)
    for status in ("200", "201"):
        schema = batches["responses"][status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/BatchAccepted"}
    labels = document["paths"]["/v1/models/{name}/labels"]["post"]
    assert set(labels["requestBody"]["content"]) == {"application/json", "text/csv"}
    schema = labels["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/LabelsApplied"}
    assert "rows_updated" in schemas["LabelsApplied"]["properties"]


def test_every_operation_has_an_example_that_is_true(document: dict[str, Any]) -> None:
    for method, path, operation in _operations(document):
        success = min(code for code in operation["responses"] if code.startswith("2"))
        content = operation["responses"][success].get("content", {})
        assert any("example" in media for media in content.values()), (method, path)
        body = operation.get("requestBody", {}).get("content", {})
        for media in body.values():
            assert "example" in media or "examples" in media, (method, path)
    routes = {
        (method.lower(), route.path): route
        for module in (*ROUTER_MODULES, prometheus)
        for route in module.router.routes
        if isinstance(route, APIRoute)
        for method in route.methods or ()
    }
    for key, example in examples.RESPONSES.items():
        model = routes[key].response_model
        if model is not None and example is not None:
            TypeAdapter(model).validate_python(example)
    for key, example in examples.REQUESTS.items():
        field = routes[key].body_field
        assert field is not None
        assert field.field_info.annotation is not None
        TypeAdapter(field.field_info.annotation).validate_python(example)


def test_the_documented_ingestion_examples_are_accepted_by_a_real_server(
    live_server: LiveServer, auth_headers: AuthHeaders
) -> None:
    headers = auth_headers("admin", "ingest", "read")
    base = live_server.base_url
    document = httpx.get(f"{base}/openapi.json").json()
    model = document["paths"]["/v1/models"]["post"]["requestBody"]["content"]
    created = httpx.post(
        f"{base}/v1/models", json=model["application/json"]["example"], headers=headers
    )
    assert created.status_code == 201, created.text
    name = created.json()["name"]

    batches = document["paths"]["/v1/models/{name}/batches"]["post"]["requestBody"]["content"]
    for case in ("rows", "columns"):
        body = batches["application/json"]["examples"][case]["value"]
        sent = httpx.post(f"{base}/v1/models/{name}/batches", json=body, headers=headers)
        assert sent.status_code == 201, sent.text
    documented = document["paths"]["/v1/models/{name}/batches"]["post"]["responses"]["201"]
    assert sent.json().keys() == documented["content"]["application/json"]["example"].keys()
    csv = httpx.post(
        f"{base}/v1/models/{name}/batches",
        content=batches["text/csv"]["example"].encode(),
        params={"batch_id": "docs-csv"},
        headers={**headers, "Content-Type": "text/csv"},
    )
    assert csv.status_code == 201, csv.text
    assert csv.json()["rows_inserted"] == 2

    labels = document["paths"]["/v1/models/{name}/labels"]["post"]["requestBody"]["content"]
    as_json = httpx.post(
        f"{base}/v1/models/{name}/labels",
        json=labels["application/json"]["example"],
        headers=headers,
    )
    assert as_json.status_code == 200, as_json.text
    assert as_json.json() == {
        "rows_updated": 1,
        "rows_unchanged": 0,
        "unknown_ids": ["tx-404"],
        "windows_touched": ["2026-10-31T23:00:00Z"],
    }
    as_csv = httpx.post(
        f"{base}/v1/models/{name}/labels",
        content=labels["text/csv"]["example"].encode(),
        headers={**headers, "Content-Type": "text/csv"},
    )
    assert as_csv.status_code == 200, as_csv.text
    assert as_csv.json()["rows_unchanged"] == 1
