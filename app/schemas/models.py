"""Schemas of monitored models: registration, partial update and the public representation."""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

Granularity = Literal["hour", "day", "week"]
ModelName = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$",
        description="Slug: lowercase letters, digits, '-' and '_', at most 64 characters.",
    ),
]


class HistoricalPi0(BaseModel):
    """pi0 is the count-weighted positive ratio of the model's labelled history."""

    model_config = ConfigDict(extra="forbid")
    policy: Literal["historical"] = "historical"
    lookback_windows: int | None = Field(
        default=None, ge=1, description="Only the most recent N windows; all history if unset."
    )


class ReferencePi0(BaseModel):
    """pi0 is the positive ratio over a reference period (dates inclusive, model timezone)."""

    model_config = ConfigDict(extra="forbid")
    policy: Literal["reference"]
    start: date
    end: date

    @model_validator(mode="after")
    def _ordered(self) -> ReferencePi0:
        if self.start > self.end:
            raise ValueError("start must not be after end")
        return self


class FixedPi0(BaseModel):
    """pi0 is set by configuration (a contractual reference prior)."""

    model_config = ConfigDict(extra="forbid")
    policy: Literal["fixed"]
    value: float = Field(gt=0, lt=1)


Pi0Policy = Annotated[HistoricalPi0 | ReferencePi0 | FixedPi0, Field(discriminator="policy")]


def _check_timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown IANA time zone {value!r}") from exc
    return value


def _check_finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


class ModelCreate(BaseModel):
    """Body of ``POST /v1/models``."""

    model_config = ConfigDict(extra="forbid")
    name: ModelName
    threshold: float = Field(description="A row is predicted positive iff score >= threshold.")
    granularity: Granularity = "day"
    timezone: str = Field(default="UTC", description="IANA zone in which windows are floored.")
    pi0: Pi0Policy = Field(default_factory=HistoricalPi0)
    min_positives: int = Field(
        default=20, ge=0, description="Fewer labelled positives: no verdict."
    )
    min_label_coverage: float = Field(
        default=0.8, ge=0, le=1, description="Lower share of labelled rows: no verdict."
    )

    _finite_threshold = field_validator("threshold")(_check_finite)
    _known_timezone = field_validator("timezone")(_check_timezone)


IMMUTABLE_FIELDS = ("name", "granularity", "timezone")


class ModelPatch(BaseModel):
    """Body of ``PATCH /v1/models/{name}``: only the fields sent change."""

    model_config = ConfigDict(extra="forbid")
    threshold: float | None = None
    pi0: Pi0Policy | None = None
    min_positives: int | None = Field(default=None, ge=0)
    min_label_coverage: float | None = Field(default=None, ge=0, le=1)

    # Declared only to refuse them by name: stored rows are already keyed by windows floored
    # with this granularity and time zone, so changing either would silently split history.
    name: None = Field(default=None, exclude=True)
    granularity: None = Field(default=None, exclude=True)
    timezone: None = Field(default=None, exclude=True)

    @field_validator(*IMMUTABLE_FIELDS, mode="before")
    @classmethod
    def _refuse_immutable(cls, value: Any, info: ValidationInfo) -> None:
        raise ValueError(f"{info.field_name} cannot be changed after registration")

    @field_validator("threshold")
    @classmethod
    def _finite_threshold(cls, value: float | None) -> float | None:
        return None if value is None else _check_finite(value)


class ModelOut(BaseModel):
    """A monitored model as the API returns it."""

    name: str
    threshold: float
    granularity: Granularity
    timezone: str
    pi0: Pi0Policy
    min_positives: int
    min_label_coverage: float
    created_at: datetime
    updated_at: datetime
