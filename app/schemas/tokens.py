"""Schemas of API tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from app.schemas.base import RequestModel, ResponseModel

Scope = Literal["ingest", "read", "admin"]
SCOPES: tuple[Scope, ...] = ("ingest", "read", "admin")

ModelPattern = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9][a-z0-9_-]{0,63}\*?$",
        description="A model's name, or a name prefix followed by '*' (`team-a-*`).",
    ),
]
MAX_MODEL_PATTERNS = 100
MODELS_DESCRIPTION = (
    "The models the token may see: names, or prefixes ending in '*'. Omitted: every model (a "
    "global token), or, for a token minted by an admin of some models, that admin's models. A "
    "model outside the set is a 404 to this token, as if it did not exist."
)


class TokenCreate(RequestModel):
    """Body of ``POST /v1/tokens``."""

    name: str = Field(
        min_length=1, max_length=100, description="Who or what uses the token (a label)."
    )
    scopes: list[Scope] = Field(min_length=1)
    models: list[ModelPattern] | None = Field(
        default=None, min_length=1, max_length=MAX_MODEL_PATTERNS, description=MODELS_DESCRIPTION
    )


class TokenOut(ResponseModel):
    """A stored token, without its secret."""

    id: int
    name: str = Field(description="Who or what uses the token (a label).")
    prefix: str
    scopes: list[Scope]
    models: list[str] | None = Field(description="The models it may see; null: every model.")
    created_at: datetime
    revoked_at: datetime | None


class TokenCreated(TokenOut):
    """A freshly created token: the only response that ever contains the secret."""

    token: str
