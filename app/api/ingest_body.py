"""What an ingest route needs before it parses: an ingest slot, and the body decoded as it
arrives (app.ingest.body's limits: 413/415 before the end of a refused body).

Dependencies of the routes in app.api.routers.batches, kept apart so that the router holds
only its routes.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import AsyncIterator
from typing import Annotated, Final

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from app.api.deps import SettingsDep
from app.errors import PayloadTooLargeError, ServiceUnavailableError
from app.ingest.body import (
    CSV_TYPES,
    SEPARATORS_PER_LABEL,
    BodyDecoder,
    BodyLimits,
    Media,
    media_type,
)
from app.settings import Settings

_DECODE_STEP: Final = 1024 * 1024


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
