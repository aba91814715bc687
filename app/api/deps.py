"""Request dependencies: settings, the transactional session and authentication."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker

from app.errors import AuthenticationError
from app.schemas.tokens import Scope
from app.services.tokens import ANONYMOUS, Principal, authenticate
from app.settings import Settings


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
    with factory() as session, session.begin():
        yield session


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


def require_scope(
    scope: Scope,
) -> Callable[[Request, HTTPAuthorizationCredentials | None, Settings, Session], Principal]:
    """A dependency that authenticates the caller and insists on ``scope``.

    401 when the token is missing, malformed, unknown or revoked; 403 when it is valid but
    lacks the scope.
    """

    def dependency(
        request: Request,
        credentials: BearerCredentials,
        settings: SettingsDep,
        session: SessionDep,
    ) -> Principal:
        if settings.auth_disabled:
            return ANONYMOUS
        principal = authenticate(session, _bearer_token(request, credentials))
        principal.require(scope)
        return principal

    return dependency


ReadAccess = Annotated[Principal, Depends(require_scope("read"))]
IngestAccess = Annotated[Principal, Depends(require_scope("ingest"))]
AdminAccess = Annotated[Principal, Depends(require_scope("admin"))]
