"""The service's work at a glance (read scope): is the worker keeping up."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import ReadAccess, SessionDep, SettingsDep
from app.schemas.service_status import ServiceStatusOut
from app.services.service_status import service_status

router = APIRouter(prefix="/v1", tags=["monitoring"])


@router.get("/status")
def get_service_status(
    session: SessionDep, principal: ReadAccess, settings: SettingsDep
) -> ServiceStatusOut:
    """What waits for the worker over every model the token may read (windows waiting, failing,
    parked; the oldest waiting change and its age) and how many workers are alive now. A model's
    own queue and its workers' heartbeats: ``GET /v1/models/{name}/status``."""
    return service_status(session, principal.models, settings)
