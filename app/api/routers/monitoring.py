"""The drop detector's API: alert states (read) and references (read; re-anchor with admin)."""

from __future__ import annotations

from fastapi import APIRouter, status

from app.api.deps import AdminAccess, ReadAccess, SessionDep
from app.schemas.monitoring import AlertsOut, ReferenceOut, ReferenceRequest
from app.services import audit
from app.services import monitoring as service

router = APIRouter(prefix="/v1/models/{name}", tags=["alerts"])


@router.get("/alerts")
def get_alerts(name: str, session: SessionDep, _: ReadAccess) -> AlertsOut:
    """Per segment: the alert state, the newest mature window it rests on, and how much recent
    data still waits for labels."""
    return service.alerts(session, name)


@router.get("/reference")
def get_reference(name: str, session: SessionDep, _: ReadAccess) -> ReferenceOut:
    """The reference every segment is judged against: versions, and each segment's windows."""
    return service.reference_info(session, name)


@router.post("/reference", status_code=status.HTTP_201_CREATED)
def set_reference(
    name: str, body: ReferenceRequest, session: SessionDep, principal: AdminAccess
) -> ReferenceOut:
    """Re-anchor the reference (admin scope): a new version, judged against from now on."""
    reference = service.set_reference(session, name, body)
    detail = reference.current.model_dump(mode="json")
    audit.record(session, principal, "reference.anchored", model=name, detail=detail)
    return reference
