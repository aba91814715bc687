"""Schemas of API tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from app.schemas.base import RequestModel, ResponseModel

Scope = Literal["ingest", "read", "admin"]
SCOPES: tuple[Scope, ...] = ("ingest", "read", "admin")


class TokenCreate(RequestModel):
    """Body of ``POST /v1/tokens``."""

    name: str = Field(
        min_length=1, max_length=100, description="Who or what uses the token (a label)."
    )
    scopes: list[Scope] = Field(min_length=1)


class TokenOut(ResponseModel):
    """A stored token, without its secret."""

    id: int
    name: str = Field(description="Who or what uses the token (a label).")
    prefix: str
    scopes: list[Scope]
    created_at: datetime
    revoked_at: datetime | None


class TokenCreated(TokenOut):
    """A freshly created token: the only response that ever contains the secret."""

    token: str
