"""Request dependencies: settings, the transactional session and authentication."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker

from app.api.write_health import WriteHealth
from app.db.engine import READ_ONLY
from app.errors import AuthenticationError
from app.schemas.tokens import Scope
from app.services.tokens import ANONYMOUS, Principal, authenticate
from app.settings import Settings

MODEL_PATH_PARAMETER = "name"


def get_settings_dep(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


def db_session(request: Request) -> Iterator[Session]:
    """One session and one transaction per request, owned here and nowhere else.

    Commits when the handler returns and rolls back when anything raises. The dependency is
    function-scoped (see SessionDep), so the commit happens before the response is sent: a
    failed commit becomes an error response instead of a 201 for data that was never stored.
    """
    factory: sessionmaker[Session] = request.app.state.session_factory
    writes = request_writes(request)
    options = {} if writes else {READ_ONLY: True}
    with factory(execution_options=options) as session, session.begin():
        yield session
    if writes:  # committed: the readiness latch's good news (app.api.write_health)
        health: WriteHealth = request.app.state.write_health
        health.succeeded()


def request_writes(request: Request) -> bool:
    """Whether the request's transaction may write. GET and HEAD only read (HTTP's safe
    methods), and so does a route that needs only the read scope (what-if is a POST for its
    body): none of them needs a write lock."""
    return request.method not in ("GET", "HEAD") and scope_of(request) != "read"


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(db_session, scope="function")]


# Declared through FastAPI's security scheme so that /docs offers an "Authorize" button.
_bearer_scheme = HTTPBearer(
    auto_error=False, description="A token printed by `calmon token create`."
)
BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer_scheme)]


def _bearer_token(request: Request, credentials: HTTPAuthorizationCredentials | None) -> str:
    token = credentials.credentials.strip() if credentials is not None else ""
    if token:
        return token
    if request.headers.get("authorization"):
        raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
    raise AuthenticationError("missing bearer token (Authorization: Bearer <token>)")


def _authorize(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    settings: Settings,
    session: Session,
    scope: Scope,
) -> Principal:
    if settings.auth_disabled:
        return ANONYMOUS
    principal = authenticate(session, _bearer_token(request, credentials))
    principal.require(scope)
    # Every route whose path names a model calls the parameter `name` (the route walk in
    # tests/integration/test_model_scoped_tokens.py holds every route to this): a model outside
    # the token's set is a 404 before anything else is read, its body included.
    model = request.path_params.get(MODEL_PATH_PARAMETER)
    if model is not None:
        principal.require_model(str(model))
    return principal


class ScopeDependency:
    """The dependency ``require_scope`` returns: it authenticates the caller and insists on
    ``scope``; the scope is readable, so the error handler can ask for it (``scope_of``)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def __call__(
        self,
        request: Request,
        credentials: BearerCredentials,
        settings: SettingsDep,
        session: SessionDep,
    ) -> Principal:
        return _authorize(request, credentials, settings, session, self.scope)


def require_scope(scope: Scope) -> ScopeDependency:
    """A dependency that authenticates the caller and insists on ``scope``.

    401 when the token is missing, malformed, unknown or revoked; 403 when it is valid but
    lacks the scope; 404, as for an unknown model, when the path names a model the token may
    not see.
    """
    return ScopeDependency(scope)


def scope_of(request: Request) -> Scope | None:
    """The scope the matched route requires, None for an open route (or no route)."""
    return route_scope(request.scope.get("route"))


def route_scope(route: object) -> Scope | None:
    """The scope ``route`` requires, None for an open route."""
    pending = list(getattr(getattr(route, "dependant", None), "dependencies", []))
    while pending:
        dependant = pending.pop()
        if isinstance(dependant.call, ScopeDependency):
            return dependant.call.scope
        pending.extend(dependant.dependencies)
    return None


async def authorize_before_body(request: Request) -> None:
    """Authenticate the caller of a route whose body could not be read.

    FastAPI reads and decodes a JSON body before it runs the route's dependencies, so a
    malformed body would otherwise be reported (422) to a caller who has no right to the route;
    the error handler calls this first, so that caller gets 401 or 403 instead.
    """
    scope = scope_of(request)
    if scope is None:
        return
    settings: Settings = request.app.state.settings
    factory: sessionmaker[Session] = request.app.state.session_factory
    credentials = await _bearer_scheme(request)

    def check() -> None:
        with factory() as session, session.begin():
            _authorize(request, credentials, settings, session, scope)

    await run_in_threadpool(check)


ReadAccess = Annotated[Principal, Depends(require_scope("read"))]
IngestAccess = Annotated[Principal, Depends(require_scope("ingest"))]
AdminAccess = Annotated[Principal, Depends(require_scope("admin"))]
