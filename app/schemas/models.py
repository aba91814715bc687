"""Schemas of monitored models: registration, partial update and the public representation."""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
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


# Each tunable setting once, so registration, update and the docs cannot disagree.
Threshold = Annotated[
    float,
    AfterValidator(_check_finite),
    Field(description="A row is predicted positive iff score >= threshold."),
]
MinPositives = Annotated[
    int, Field(ge=0, description="A window with fewer labelled positives gets no verdict.")
]
MinLabelCoverage = Annotated[
    float,
    Field(ge=0, le=1, description="A window with a lower share of labelled rows gets no verdict."),
]
BaselineWindows = Annotated[
    int,
    Field(
        ge=1,
        description="Usable windows before the current one that form its drift baseline "
        "(the reference period instead, under the reference pi0 policy).",
    ),
]
MinHistoryWindows = Annotated[
    int, Field(ge=0, description="Fewer usable baseline windows: no verdict.")
]
MinHistoryPositives = Annotated[
    int, Field(ge=0, description="Fewer labelled positives in the baseline: no verdict.")
]
Pi0Tolerance = Annotated[
    float,
    Field(
        ge=0,
        description="Relative move of the historical pi0 that starts a new pi0 version "
        "(and recomputes the calibrated series).",
    ),
]
AlertFloor = Annotated[
    float,
    Field(
        ge=0,
        le=1,
        description="Floor on the calibrated average precision (alert when below); null: none.",
    ),
]


class ModelCreate(BaseModel):
    """Body of ``POST /v1/models``."""

    model_config = ConfigDict(extra="forbid")
    name: ModelName
    threshold: Threshold
    granularity: Granularity = "day"
    timezone: str = Field(default="UTC", description="IANA zone in which windows are floored.")
    pi0: Pi0Policy = Field(default_factory=HistoricalPi0)
    min_positives: MinPositives = 20
    min_label_coverage: MinLabelCoverage = 0.8
    baseline_windows: BaselineWindows = 7
    min_history_windows: MinHistoryWindows = 3
    min_history_positives: MinHistoryPositives = 30
    pi0_tolerance: Pi0Tolerance = 0.1
    alert_floor: AlertFloor | None = None

    _known_timezone = field_validator("timezone")(_check_timezone)


IMMUTABLE_FIELDS = ("name", "granularity", "timezone")
NULLABLE_FIELDS = frozenset({"alert_floor"})


class ModelPatch(BaseModel):
    """Body of ``PATCH /v1/models/{name}``: only the fields sent change."""

    model_config = ConfigDict(extra="forbid")
    threshold: Threshold | None = None
    pi0: Pi0Policy | None = None
    min_positives: MinPositives | None = None
    min_label_coverage: MinLabelCoverage | None = None
    baseline_windows: BaselineWindows | None = None
    min_history_windows: MinHistoryWindows | None = None
    min_history_positives: MinHistoryPositives | None = None
    pi0_tolerance: Pi0Tolerance | None = None
    alert_floor: AlertFloor | None = Field(default=None, description="null removes the floor.")

    # Declared only to refuse them by name: stored rows are already keyed by windows floored
    # with this granularity and time zone, so changing either would silently split history.
    name: None = Field(default=None, exclude=True)
    granularity: None = Field(default=None, exclude=True)
    timezone: None = Field(default=None, exclude=True)

    @field_validator(*IMMUTABLE_FIELDS, mode="before")
    @classmethod
    def _refuse_immutable(cls, value: Any, info: ValidationInfo) -> None:
        raise ValueError(f"{info.field_name} cannot be changed after registration")

    @field_validator(
        "threshold",
        "pi0",
        "min_positives",
        "min_label_coverage",
        "baseline_windows",
        "min_history_windows",
        "min_history_positives",
        "pi0_tolerance",
    )
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        # Only an explicit null reaches this (defaults are not validated): omit a field to
        # keep it; only alert_floor has a meaning for null.
        if value is None:
            raise ValueError(f"{info.field_name} cannot be null")
        return value


class ModelOut(BaseModel):
    """A monitored model as the API returns it."""

    name: str
    threshold: float
    granularity: Granularity
    timezone: str
    pi0: Pi0Policy
    min_positives: int
    min_label_coverage: float
    baseline_windows: int
    min_history_windows: int
    min_history_positives: int
    pi0_tolerance: float
    alert_floor: float | None
    created_at: datetime
    updated_at: datetime
