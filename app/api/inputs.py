"""The input rules (app.input_rules) on the URL of every request, before any route runs.

A path or query parameter reaches a route as a plain ``str``; checking the URL once here covers
every route, present and future, instead of each parameter declaration.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import PayloadValidationError
from app.input_rules import NUL_MESSAGE, contains_nul


class UrlRulesMiddleware:
    """Refuse (422) a request whose path or a query parameter holds a NUL character."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            field = _offending_field(scope)
            if field is not None:
                error = PayloadValidationError(
                    f"invalid request: {field} {NUL_MESSAGE}",
                    details=[{"field": field, "message": NUL_MESSAGE}],
                )
                response = JSONResponse(error.to_body(), status_code=error.status_code)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _offending_field(scope: Scope) -> str | None:
    if contains_nul(scope["path"]):
        return "path"
    query = scope.get("query_string", b"").decode("latin-1")
    for name, value in parse_qsl(query, keep_blank_values=True, encoding="latin-1"):
        if contains_nul(name) or contains_nul(value):
            return name if not contains_nul(name) else "query"
    return None
