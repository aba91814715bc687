"""Monitored models: register, list, read, reconfigure, delete."""

from __future__ import annotations

from fastapi import APIRouter, status

from app.api.deps import AdminAccess, ReadAccess, SessionDep
from app.db.types import utcnow
from app.schemas.models import ModelCreate, ModelDeleted, ModelOut, ModelPatch
from app.services import audit
from app.services import models as service

router = APIRouter(prefix="/v1/models", tags=["models"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={409: {"description": "A model of that name already exists"}},
)
def create_model(body: ModelCreate, session: SessionDep, principal: AdminAccess) -> ModelOut:
    """Register a model (admin scope; an admin of some models registers within them only);
    409 if the name is taken."""
    principal.require_new_model(body.name)
    created = service.create_model(session, body)
    detail = created.model_dump(mode="json", exclude={"created_at", "updated_at"})
    audit.record(session, principal, "model.created", model=created.name, detail=detail)
    return created


@router.get("")
def list_models(session: SessionDep, principal: ReadAccess) -> list[ModelOut]:
    """Every registered model the token may see (read scope)."""
    return [m for m in service.list_models(session) if principal.models.sees(m.name)]


@router.get("/{name}")
def get_model(name: str, session: SessionDep, _: ReadAccess) -> ModelOut:
    """One model by name (read scope); 404 if unknown."""
    return service.read_model(session, name)


@router.patch("/{name}")
def update_model(
    name: str, body: ModelPatch, session: SessionDep, principal: AdminAccess
) -> ModelOut:
    """Change threshold, pi0 policy or verdict gates (admin scope); re-dirties every window."""
    before = service.read_model(session, name).model_dump(mode="json")
    updated = service.update_model(session, name, body)
    changed = audit.changes(before, updated.model_dump(mode="json"))
    audit.record(session, principal, "model.changed", model=name, detail=changed)
    return updated


@router.delete("/{name}")
def delete_model(name: str, session: SessionDep, principal: AdminAccess) -> ModelDeleted:
    """Delete a model and all its data (admin scope); 404 if unknown.

    At once: the model, its windows, metrics, verdicts and batches; its name is free again.
    Its predictions are removed by the worker in bounded chunks (at once on SQLite).
    """
    deleted = service.delete_model(session, name, utcnow())
    audit.record(session, principal, "model.deleted", model=name, detail={})
    return deleted
