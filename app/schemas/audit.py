"""Schemas of the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from app.schemas.base import ResponseModel

AuditAction = Literal[
    "model.created",
    "model.changed",
    "model.deleted",
    "reference.anchored",
    "token.created",
    "token.revoked",
]


class AuditEventOut(ResponseModel):
    """One admin act."""

    id: int = Field(description="Increasing; pass the smallest one seen as `before` to page.")
    at: datetime = Field(description="When the act was committed (the API's clock).")
    actor: str = Field(description="The name of the token that acted ('command line' for the CLI).")
    token_id: int | None = Field(description="The id of the token that acted; null: the CLI.")
    action: AuditAction = Field(description="What was done.")
    model: str | None = Field(description="The model acted on; null for a token's act.")
    detail: dict[str, Any] = Field(
        description="What changed: a model's settings before and after, a reference's new "
        "version, a token's id, name, scopes and models (never its secret)."
    )
