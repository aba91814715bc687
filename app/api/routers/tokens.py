"""API tokens over HTTP (admin scope); `calmon token ...` does the same from a shell."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, status

from app.api.deps import AdminAccess, SessionDep
from app.input_rules import MAX_DB_INTEGER
from app.schemas.tokens import TokenCreate, TokenCreated, TokenOut
from app.services import audit
from app.services import tokens as service

router = APIRouter(prefix="/v1/tokens", tags=["tokens"])


@router.post("", status_code=status.HTTP_201_CREATED)
def create_token(body: TokenCreate, session: SessionDep, principal: AdminAccess) -> TokenCreated:
    """Create a token; the response is the only time its secret is shown. An admin of some
    models mints tokens within them (its own models when `models` is omitted)."""
    created = service.create_token(
        session, body.name, body.scopes, body.models, minted_by=principal
    )
    audit.record(session, principal, "token.created", detail=audit.token_detail(created))
    return created


@router.get("")
def list_tokens(session: SessionDep, principal: AdminAccess) -> list[TokenOut]:
    """Every token without its secret, revoked ones included (an admin of some models: the
    tokens within them)."""
    return service.list_tokens(session, seen_by=principal)


@router.delete("/{token_id}")
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=MAX_DB_INTEGER)],
    session: SessionDep,
    principal: AdminAccess,
) -> TokenOut:
    """Revoke a token; requests with it get 401 from now on (an admin of some models revokes
    the tokens within them only; any other id is a 404)."""
    revoked = service.revoke_token(session, token_id, by=principal)
    audit.record(session, principal, "token.revoked", detail=audit.token_detail(revoked))
    return revoked
