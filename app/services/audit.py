"""The audit log: every admin act recorded in its own transaction, read by the admins it concerns.

An admin of some models reads the acts on its models and on tokens within them; the global
admin reads everything.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from app.db.repositories.audit import AuditRepository
from app.db.tables import AuditEvent
from app.db.types import utcnow
from app.schemas.audit import AuditAction, AuditEventOut
from app.schemas.tokens import TokenOut
from app.services.model_access import ModelSet
from app.services.tokens import Principal

COMMAND_LINE = Principal(name="command line", scopes=frozenset({"admin"}))
_SCAN = 500  # events read per round while filtering for an admin of some models


def record(
    session: Session,
    by: Principal,
    action: AuditAction,
    *,
    model: str | None = None,
    detail: dict[str, Any],
) -> None:
    """Append one act to the log, in the act's transaction."""
    AuditRepository(session).add(
        AuditEvent(
            at=utcnow(),
            actor=by.name,
            token_id=by.token_id,
            action=action,
            model=model,
            detail=detail,
        )
    )


def token_detail(token: TokenOut) -> dict[str, Any]:
    """A token as the log keeps it: everything but its secret (a TokenCreated's ``token``)."""
    return TokenOut.model_validate(token.model_dump()).model_dump(
        mode="json", include={"id", "name", "prefix", "scopes", "models"}
    )


def changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The fields whose value differs, as ``{field: {"before": ..., "after": ...}}``."""
    return {
        key: {"before": before.get(key), "after": value}
        for key, value in after.items()
        if before.get(key) != value and key != "updated_at"
    }


def events(
    session: Session, reader: Principal, *, model: str | None, before: int | None, limit: int
) -> list[AuditEventOut]:
    """The newest ``limit`` events ``reader`` may see (ids below ``before``, on ``model``)."""
    repository = AuditRepository(session)
    found: list[AuditEventOut] = []
    while len(found) < limit:
        rows = repository.newest(before, model, _SCAN if not reader.models.everything else limit)
        found += [_out(row) for row in rows if _concerns(reader, row)]
        if not rows:
            break
        before = rows[-1].id
    return found[:limit]


def _concerns(reader: Principal, row: AuditEvent) -> bool:
    if row.model is not None:
        return reader.models.sees(row.model)
    return reader.models.covers(ModelSet.of(row.detail.get("models")))


def _out(row: AuditEvent) -> AuditEventOut:
    return AuditEventOut.model_validate(row, from_attributes=True)
