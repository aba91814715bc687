"""Schemas of API tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from app.schemas.base import RequestModel

Scope = Literal["ingest", "read", "admin"]
SCOPES: tuple[Scope, ...] = ("ingest", "read", "admin")


class TokenCreate(RequestModel):
    """Body of ``POST /v1/tokens``."""

    name: str = Field(min_length=1, max_length=100)
    scopes: list[Scope] = Field(min_length=1)


class TokenOut(BaseModel):
    """A stored token, without its secret."""

    id: int
    name: str
    prefix: str
    scopes: list[Scope]
    created_at: datetime
    revoked_at: datetime | None


class TokenCreated(TokenOut):
    """A freshly created token: the only response that ever contains the secret."""

    token: str
