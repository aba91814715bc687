"""The audit log over HTTP (admin scope): who did which admin act, when, and what changed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import AdminAccess, SessionDep
from app.input_rules import MAX_DB_INTEGER
from app.schemas.audit import AuditEventOut
from app.services import audit as service

router = APIRouter(prefix="/v1/audit", tags=["tokens"])


@router.get("", responses={404: {"description": "The model is not one the token may see"}})
def list_audit_events(
    session: SessionDep,
    principal: AdminAccess,
    model: Annotated[
        str | None, Query(min_length=1, max_length=64, description="Acts on this model only.")
    ] = None,
    before: Annotated[
        int | None, Query(ge=1, le=MAX_DB_INTEGER, description="Events with smaller ids (paging).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many events.")] = 100,
) -> list[AuditEventOut]:
    """Admin acts, newest first: models registered, changed and deleted, references re-anchored,
    tokens minted and revoked. An admin of some models sees the acts on them (and on tokens
    within them); the global admin sees all."""
    if model is not None:
        principal.require_model(model)
    return service.events(session, principal, model=model, before=before, limit=limit)
