"""Schema of the service's work at a glance (``GET /v1/status``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from app.schemas.base import ResponseModel


class ServiceStatusOut(ResponseModel):
    """Whether the worker keeps up, over the models the token may read."""

    models: int = Field(description="Models the token may read.")
    dirty_windows: int = Field(description="Windows waiting for the worker.")
    failing_windows: int = Field(description="Of those, windows whose last computation failed.")
    parked_windows: int = Field(
        description="Windows the worker gave up on until their rows, labels or settings change."
    )
    oldest_dirty_update: datetime | None = Field(
        description="When the oldest waiting change arrived; null: nothing waits."
    )
    worker_lag_seconds: float = Field(description="Age of the oldest waiting change; 0 if none.")
    workers_alive: int = Field(
        description="Workers whose heartbeat vouches for them now (not stopped)."
    )
