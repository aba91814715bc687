"""Request dependencies: settings, the transactional session and authentication."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Request
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


def _bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise AuthenticationError("missing bearer token (Authorization: Bearer <token>)")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
    return token.strip()


def require_scope(scope: Scope) -> Callable[[Request, Settings, Session], Principal]:
    """A dependency that authenticates the caller and insists on ``scope``.

    401 when the token is missing, malformed, unknown or revoked; 403 when it is valid but
    lacks the scope.
    """

    def dependency(request: Request, settings: SettingsDep, session: SessionDep) -> Principal:
        if settings.auth_disabled:
            return ANONYMOUS
        principal = authenticate(session, _bearer_token(request))
        principal.require(scope)
        return principal

    return dependency


ReadAccess = Annotated[Principal, Depends(require_scope("read"))]
IngestAccess = Annotated[Principal, Depends(require_scope("ingest"))]
AdminAccess = Annotated[Principal, Depends(require_scope("admin"))]
