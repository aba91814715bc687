"""One place that turns exceptions into JSON error bodies of the same shape.

Every body is ``{"error": {"code", "message", "details": [{"field", "row"?, "message"}]}}``.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api.deps import authorize_before_body, request_writes
from app.api.write_health import WriteHealth
from app.db.trouble import TROUBLE_TYPES, describe, is_trouble, refuses_writes
from app.errors import (
    CalmonError,
    ErrorDetail,
    PayloadValidationError,
    ServiceUnavailableError,
)

logger = logging.getLogger("calmon.api")

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}
_RETRY_AFTER_SECONDS = 2


def _render(exc: CalmonError, status_code: int | None = None) -> JSONResponse:
    return JSONResponse(
        exc.to_body(), status_code=status_code or exc.status_code, headers=exc.headers or None
    )


async def _calmon_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CalmonError)
    return _render(exc)


async def _request_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    try:
        await authorize_before_body(request)
    except CalmonError as refusal:
        return _render(refusal)
    details = [_detail(error) for error in exc.errors()]
    summary = "; ".join(f"{d['field']}: {d['message']}" for d in details[:3])
    return _render(PayloadValidationError(f"invalid request: {summary}", details=details))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:
        # FastAPI's "error parsing the body" (a body that is not even text): the same as any
        # malformed body, a 422, and only for a caller who may use the route.
        try:
            await authorize_before_body(request)
        except CalmonError as refusal:
            return _render(refusal)
        detail = ErrorDetail(field="body", message=str(exc.detail))
        return _render(PayloadValidationError(f"invalid request: {exc.detail}", details=[detail]))
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette names the methods of the first route that matched the path only; one path
        # is several routes here (GET, PATCH, DELETE /v1/models/{name}): name them all.
        headers["Allow"] = ", ".join(_allowed_methods(request)) or headers.get("Allow", "")
    error = CalmonError(str(exc.detail), headers=headers)
    body = error.to_body()
    body["error"]["code"] = _HTTP_CODES.get(exc.status_code, "http_error")
    return JSONResponse(body, status_code=exc.status_code, headers=headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method the API documents at the request's path (its OpenAPI operations)."""
    methods: set[str] = set()
    for path, operations in request.app.openapi()["paths"].items():
        if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", path), request.url.path):
            methods |= {method.upper() for method in operations}
    return sorted(methods)


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    # The server unreachable or restarting, a lock or statement timeout, a deadlock, a full
    # disk, a busy pool: the request may succeed on retry, which 503 tells clients and load
    # balancers. Whether a write that failed at COMMIT was kept cannot be known here, hence the
    # advice: re-sending a batch with its batch_id is always safe.
    if not is_trouble(exc):
        return await _unhandled(request, exc)
    reason = describe(exc)
    if request_writes(request) and refuses_writes(exc):
        # Every write's database failure passes here: /readyz turns red until a write succeeds.
        health: WriteHealth = request.app.state.write_health
        health.failed(reason)
    logger.warning(
        "database_unavailable",
        extra={
            "path": request.url.path,
            "reason": reason,
            "error": str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "",
        },
    )
    return _render(
        ServiceUnavailableError(
            f"{reason}; retry later (re-sending a batch with the same batch_id is safe)",
            headers={"Retry-After": str(_RETRY_AFTER_SECONDS)},
        )
    )


async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
    logger.error(
        "unhandled_error", exc_info=exc, extra={"path": request.url.path, "method": request.method}
    )
    return _render(CalmonError("internal server error"))


def _detail(error: Any) -> ErrorDetail:
    # FastAPI prefixes the location with where the value came from: body, query, path, header.
    location = [str(part) for part in error.get("loc", ())]
    if location and location[0] in {"body", "query", "path", "header"}:
        location = location[1:]
    if error.get("type") == "json_invalid":  # the location is a character offset, not a field
        reason = error.get("ctx", {}).get("error", "")
        message = f"not valid JSON at character {'.'.join(location)}: {reason}".rstrip(": ")
        return ErrorDetail(field="body", message=message)
    return ErrorDetail(field=".".join(location) or "body", message=str(error.get("msg", "")))


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers on ``app`` (the CalmonError handler serves every subclass)."""
    app.add_exception_handler(CalmonError, _calmon_error)
    app.add_exception_handler(RequestValidationError, _request_validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    for trouble in TROUBLE_TYPES:
        app.add_exception_handler(trouble, _database_unavailable)
    # Registered on Exception, Starlette runs this in its outermost middleware: a JSON body
    # and one structured log line instead of a plain-text 500.
    app.add_exception_handler(Exception, _unhandled)
