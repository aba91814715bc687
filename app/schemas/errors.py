"""The error body every 4xx and 5xx response carries (rendered by app.api.errors)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from app.schemas.base import ResponseModel


class ErrorDetailOut(ResponseModel):
    """One problem: which field (and for a batch which row) and why."""

    field: str
    row: int | None = Field(default=None, description="0-based row of a batch, if any.")
    message: str


class ErrorOut(ResponseModel):
    """What went wrong; some errors add fields of their own (error_count, max_rows...)."""

    model_config = ConfigDict(extra="allow")
    code: str = Field(description="Machine-readable: validation_error, not_found, ...")
    message: str
    details: list[ErrorDetailOut] | None = None


class ErrorBody(ResponseModel):
    """``{"error": {"code", "message", "details"?}}``."""

    error: ErrorOut
