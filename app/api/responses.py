"""The error responses each route can give, written into the OpenAPI schema in one place.

Every route shares the error body (app.schemas.errors); which statuses a route documents follows
from what it is: one that needs a scope answers 401 and 403, one with parameters or a body 422,
one naming a resource in its path 404, and every route that reads the database 503. Applied to
every router create_app includes, so a router added later is documented without repeating it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute

from app.api.deps import route_scope
from app.schemas.errors import ErrorBody

_DESCRIPTIONS = {
    401: "Missing, malformed, unknown or revoked token",
    403: "The token lacks the scope this operation needs",
    404: "No model (or resource) of that name",
    422: "Invalid parameters or body: the fields (and rows) at fault",
    503: "The database cannot serve the request now (the message says why); retry",
}
_OPEN_DATABASE_ROUTES = frozenset({"/readyz"})


def _statuses(route: APIRoute) -> list[int]:
    statuses = []
    if route_scope(route) is not None:
        statuses += [401, 403, 503]
    elif route.path in _OPEN_DATABASE_ROUTES:
        statuses.append(503)
    dependant = route.dependant
    if dependant.path_params or dependant.query_params or route.body_field is not None:
        statuses.append(422)
    if dependant.path_params:  # a model, window or token named in the path may not exist
        statuses.append(404)
    return statuses


def document_errors(router: APIRouter) -> None:
    """Add the shared error responses to the OpenAPI entry of every route of ``router`` (kept
    where a route already describes a status itself); idempotent."""
    for route in router.routes:
        if not isinstance(route, APIRoute):
            continue
        responses: dict[int | str, dict[str, Any]] = dict(route.responses)
        for status in _statuses(route):
            entry = dict(responses.get(status, {}))
            entry.setdefault("description", _DESCRIPTIONS[status])
            entry.setdefault("model", ErrorBody)
            responses[status] = entry
        for code, described in list(responses.items()):
            if int(code) >= 400 and "model" not in described:
                responses[code] = {**described, "model": ErrorBody}
        route.responses = responses
