"""Ingestion over HTTP: prediction batches and late labels (ingest scope).

The bodies are read as raw bytes, not through pydantic: a 50,000-row batch is parsed and
validated column-wise by app.ingest, which is what makes the columnar path fast.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse

from app.api.deps import IngestAccess, SessionDep, SettingsDep
from app.db.types import utcnow
from app.errors import PayloadTooLargeError
from app.ingest import service
from app.ingest.body import decode_body, parse_body
from app.ingest.labels import parse_labels
from app.observability.service_metrics import service_metrics

router = APIRouter(prefix="/v1/models", tags=["ingest"])


async def read_body(request: Request, settings: SettingsDep) -> bytes:
    """The request body, refused (413) as soon as it passes the byte limit."""
    limit = settings.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def _too_large(limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"request body exceeds {limit} bytes (CALMON_MAX_BODY_BYTES)")


Body = Annotated[bytes, Depends(read_body)]


@router.post(
    "/{name}/batches",
    status_code=201,
    responses={
        200: {"description": "Replay of an already stored batch (same batch_id and content)"},
        409: {"description": "batch_id already used for different content"},
        413: {"description": "Too many rows or bytes"},
        415: {"description": "Unsupported Content-Type or Content-Encoding"},
        422: {"description": "Invalid rows: the first errors with row index and field"},
    },
)
def post_batch(
    name: str,
    *,
    request: Request,
    _: IngestAccess,
    body: Body,
    session: SessionDep,
    settings: SettingsDep,
    batch_id: Annotated[str | None, Query()] = None,
    x_batch_id: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    """Store a batch of predictions (row JSON, columnar JSON or CSV; gzip accepted)."""
    decoded = decode_body(body, request.headers.get("content-encoding"), settings.max_body_bytes)
    raw = parse_body(decoded, request.headers.get("content-type"), batch_id or x_batch_id)
    now = utcnow()
    with service_metrics(request).counting_batch(name, raw.rows):
        outcome = service.ingest_batch(session, name, raw, service.limits_from(settings, now), now)
    return JSONResponse(outcome.response, status_code=201 if outcome.created else 200)


@router.post("/{name}/labels")
def post_labels(
    name: str,
    request: Request,
    _: IngestAccess,
    body: Body,
    session: SessionDep,
    settings: SettingsDep,
) -> JSONResponse:
    """Set labels of known predictions by id; unknown ids are listed, not dropped."""
    decoded = decode_body(body, request.headers.get("content-encoding"), settings.max_body_bytes)
    now = utcnow()
    limits = service.limits_from(settings, now)
    result = service.update_labels(session, name, parse_labels(decoded), limits, now)
    return JSONResponse(result)
