"""Schemas of a model's segments (``GET /v1/models/{name}/segments``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from app.schemas.base import ResponseModel


class SegmentOut(ResponseModel):
    """One segment of a model and what the worker has computed of it so far."""

    segment: str
    windows: int = Field(description="Windows computed for this segment (0: none yet).")
    rows: int = Field(description="Predictions in those computed windows.")
    newest_window: datetime | None = Field(
        description="Start of the newest computed window; null: none computed yet."
    )


class SegmentsOut(ResponseModel):
    """Every segment a model has received rows for, 'all' first."""

    model: str
    segments: list[SegmentOut] = Field(description="'all' first, then by name.")
