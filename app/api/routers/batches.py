"""Ingestion over HTTP: prediction batches and late labels (ingest scope).

The bodies are read as raw bytes, not through pydantic: a 50,000-row batch is parsed and
validated column-wise by app.ingest, which is what makes the columnar path fast. Reading them
(an ingest slot, the decoded body) is app.api.ingest_body; their OpenAPI description
app.api.ingest_docs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response

from app.api import ingest_docs as docs
from app.api.deps import IngestAccess, SessionDep, SettingsDep
from app.api.ingest_body import BatchBody, IngestSlot, LabelsBody, labels_media
from app.ingest.body import parse_body
from app.ingest.labels import parse_labels
from app.observability.service_metrics import service_metrics
from app.schemas.ingest import BatchAccepted, LabelsApplied
from app.services import ingest as service

router = APIRouter(prefix="/v1/models", tags=["ingest"])


@router.post(
    "/{name}/batches",
    status_code=201,
    response_model=BatchAccepted,
    openapi_extra={"requestBody": docs.BATCH_BODY},
    responses={
        200: {
            "model": BatchAccepted,
            "description": "Replay of an already stored batch (same batch_id and content): "
            "the stored response, nothing written",
        },
        201: {"description": "The batch is stored and its windows queued for the worker"},
        409: {"description": "batch_id already used for different content"},
        **docs.ingest_responses(
            unsupported="Unsupported Content-Type or Content-Encoding",
            invalid="Invalid rows: the first errors with row index and field",
        ),
    },
)
def post_batch(
    name: str,
    *,
    request: Request,
    response: Response,
    _: IngestAccess,
    __: IngestSlot,
    body: BatchBody,
    session: SessionDep,
    settings: SettingsDep,
    batch_id: Annotated[
        str | None, Query(description="The batch's id, if the body does not carry it (CSV).")
    ] = None,
    x_batch_id: Annotated[
        str | None, Header(description="The batch's id, if the body does not carry it (CSV).")
    ] = None,
) -> BatchAccepted:
    """Store a batch of predictions (row JSON, columnar JSON or CSV; gzip accepted)."""
    raw = parse_body(
        body,
        request.headers.get("content-type"),
        batch_id or x_batch_id,
        settings.max_rows_per_request,
    )
    body.clear()  # only the parsed columns are needed from here on: free the bytes now
    now = service.request_time(session)
    with service_metrics(request).counting_batch(name, raw.rows):
        outcome = service.ingest_batch(session, name, raw, service.limits_from(settings, now), now)
    if not outcome.created:
        response.status_code = 200  # a replay: the stored response, nothing written
    return outcome.response


@router.post(
    "/{name}/labels",
    response_model=LabelsApplied,
    openapi_extra={"requestBody": docs.LABELS_BODY},
    responses=docs.ingest_responses(
        unsupported="Unsupported Content-Encoding",
        invalid="Invalid labels: the first errors with entry index and field",
    ),
)
def post_labels(
    name: str,
    request: Request,
    _: IngestAccess,
    __: IngestSlot,
    body: LabelsBody,
    session: SessionDep,
    settings: SettingsDep,
) -> LabelsApplied:
    """Set labels of known predictions by id, with when they arrived and where from; unknown
    ids are listed, not dropped."""
    now = service.request_time(session)
    limits = service.limits_from(settings, now)
    updates = parse_labels(
        body,
        labels_media(request.headers.get("content-type")),
        settings.max_rows_per_request,
        limits.max_timestamp_micros,
    )
    body.clear()
    return service.update_labels(session, name, updates, limits, now)
