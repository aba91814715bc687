"""Ingestion over HTTP: prediction batches and late labels (ingest scope).

The bodies are read as raw bytes, not through pydantic: a 50,000-row batch is parsed and
validated column-wise by app.ingest, which is what makes the columnar path fast.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from app.api import examples
from app.api.deps import IngestAccess, SessionDep, SettingsDep
from app.errors import PayloadTooLargeError, ServiceUnavailableError
from app.ingest.body import (
    CSV_TYPES,
    SEPARATORS_PER_LABEL,
    BodyDecoder,
    BodyLimits,
    Media,
    media_type,
    parse_body,
)
from app.ingest.labels import parse_labels
from app.observability.service_metrics import service_metrics
from app.schemas.ingest import BatchAccepted, LabelsApplied
from app.services import ingest as service
from app.settings import Settings

router = APIRouter(prefix="/v1/models", tags=["ingest"])


async def ingest_slot(request: Request, settings: SettingsDep) -> AsyncIterator[None]:
    """One of the process's CALMON_MAX_CONCURRENT_INGEST slots, held while the body is read,
    decoded, parsed and written; 503 if none frees up within the pool timeout.

    Each ingest request may cost a few times CALMON_MAX_BODY_BYTES of memory; the slots bound
    how many do at once, whatever the size of the server's thread pool.
    """
    slots: threading.BoundedSemaphore = request.app.state.ingest_slots
    if not slots.acquire(blocking=False):
        timeout = settings.db_pool_timeout_seconds
        if not await run_in_threadpool(slots.acquire, True, timeout):
            raise ServiceUnavailableError(
                f"{settings.max_concurrent_ingest} ingest requests are in progress "
                "(CALMON_MAX_CONCURRENT_INGEST); retry later",
                headers={"Retry-After": "2"},
            )
    try:
        yield
    finally:
        slots.release()


async def _read_decoded(
    request: Request, settings: Settings, media: Media, limits: BodyLimits
) -> bytearray:
    """The body decoded as it arrives, refused (413, 415) at the first limit it passes: a
    refused body is not read to its end, and its compressed form is never held whole."""
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    decoder = BodyDecoder(request.headers.get("content-encoding"), limits, media)
    pending: list[bytes] = []
    pending_size = received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise _too_large(limit)
        pending.append(chunk)
        pending_size += len(chunk)
        if pending_size >= _DECODE_STEP:
            # Off the event loop: decompressing and counting a MiB takes milliseconds.
            await run_in_threadpool(decoder.feed, b"".join(pending))
            pending, pending_size = [], 0
    if pending:
        await run_in_threadpool(decoder.feed, b"".join(pending))
    return decoder.finish()


async def read_batch_body(request: Request, settings: SettingsDep) -> bytearray:
    """A batch body in the format its Content-Type names (415 for others, before reading)."""
    media = media_type(request.headers.get("content-type"))
    return await _read_decoded(request, settings, media, body_limits(settings))


def labels_media(content_type: str | None) -> Media:
    """A label update's format: CSV when the Content-Type says so, JSON otherwise (label
    updates were read as JSON whatever their Content-Type before CSV was accepted)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return "csv" if media in CSV_TYPES else "json"


async def read_labels_body(request: Request, settings: SettingsDep) -> bytearray:
    """A label update (JSON, or CSV with id and label columns)."""
    media = labels_media(request.headers.get("content-type"))
    limits = dataclasses.replace(body_limits(settings), separators_per_row=SEPARATORS_PER_LABEL)
    return await _read_decoded(request, settings, media, limits)


def _too_large(limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"request body exceeds {limit} bytes (CALMON_MAX_BODY_BYTES)")


def body_limits(settings: Settings) -> BodyLimits:
    """What one request body may cost."""
    return BodyLimits(
        max_bytes=settings.max_body_bytes,
        max_rows=settings.max_rows_per_request,
        max_gzip_members=settings.max_gzip_members,
        max_gzip_ratio=settings.max_gzip_ratio,
    )


IngestSlot = Annotated[None, Depends(ingest_slot, scope="function")]
BatchBody = Annotated[bytearray, Depends(read_batch_body)]
LabelsBody = Annotated[bytearray, Depends(read_labels_body)]
_DECODE_STEP = 1024 * 1024
_TOO_LARGE = (
    "Too many rows or bytes (a body holding characters past U+00FF may be half of "
    "CALMON_MAX_BODY_BYTES, past U+FFFF a quarter), gzip members or compression ratio"
)
_UNAVAILABLE = (
    "The database cannot serve the request now, or CALMON_MAX_CONCURRENT_INGEST ingest "
    "requests are in progress and none finished in time (Retry-After); retry (a batch with "
    "the same batch_id)"
)


_JSON_REF = "#/components/schemas/{}"
_BATCH_BODY = {
    "required": True,
    "description": "Row JSON, columnar JSON or CSV (the Content-Type says which); gzip "
    "with Content-Encoding: gzip. CSV takes its batch_id from X-Batch-Id or ?batch_id=.",
    "content": {
        "application/json": {
            "schema": {
                "oneOf": [
                    {"$ref": _JSON_REF.format("RowBatch")},
                    {"$ref": _JSON_REF.format("ColumnarBatch")},
                ]
            },
            "examples": {
                "rows": {"summary": "Row JSON", "value": examples.ROW_BATCH},
                "columns": {"summary": "Columnar JSON", "value": examples.COLUMNAR_BATCH},
            },
        },
        "text/csv": {
            "schema": {
                "type": "string",
                "description": "A header naming the columns (id, timestamp, score and "
                "optionally label, segment, labelled_at, source, amount and entity), then one "
                "line per prediction; an empty label is unknown, an empty segment 'all', an "
                "empty labelled_at, source, amount or entity not sent.",
            },
            "example": examples.CSV_BATCH,
        },
    },
}
_LABELS_BODY = {
    "required": True,
    "description": "JSON, or CSV with the columns id and label and optionally labelled_at "
    "and source (Content-Type: text/csv), as a chargeback feed is exported.",
    "content": {
        "application/json": {
            "schema": {
                "oneOf": [
                    {"$ref": _JSON_REF.format("LabelUpdate")},
                    {"type": "array", "items": {"$ref": _JSON_REF.format("LabelEntry")}},
                ]
            },
            "example": examples.LABELS_JSON,
        },
        "text/csv": {
            "schema": {
                "type": "string",
                "description": "Header id,label[,labelled_at][,source]; labels 0 or 1.",
            },
            "example": examples.LABELS_CSV,
        },
    },
}


@router.post(
    "/{name}/batches",
    status_code=201,
    response_model=BatchAccepted,
    openapi_extra={"requestBody": _BATCH_BODY},
    responses={
        200: {
            "model": BatchAccepted,
            "description": "Replay of an already stored batch (same batch_id and content): "
            "the stored response, nothing written",
        },
        201: {"description": "The batch is stored and its windows queued for the worker"},
        409: {"description": "batch_id already used for different content"},
        413: {"description": _TOO_LARGE},
        415: {"description": "Unsupported Content-Type or Content-Encoding"},
        422: {"description": "Invalid rows: the first errors with row index and field"},
        503: {"description": _UNAVAILABLE},
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
    openapi_extra={"requestBody": _LABELS_BODY},
    responses={
        413: {"description": _TOO_LARGE},
        415: {"description": "Unsupported Content-Encoding"},
        422: {"description": "Invalid labels: the first errors with entry index and field"},
        503: {"description": _UNAVAILABLE},
    },
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
