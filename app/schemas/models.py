"""Schemas of monitored models: registration, partial update and the public representation."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, get_args, get_type_hints
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from app.input_rules import MAX_AMOUNT
from app.monitoring.vocabulary import Granularity
from app.schemas.base import RequestModel, ResponseModel
from app.schemas.instants import Day
from app.schemas.priors import OpenPrior

ModelName = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$",
        description="Slug: lowercase letters, digits, '-' and '_', at most 64 characters.",
    ),
]


class HistoricalPi0(RequestModel):
    """pi0 is the count-weighted positive ratio of the model's labelled history."""

    policy: Literal["historical"] = "historical"
    lookback_windows: int | None = Field(
        default=None, ge=1, description="Only the most recent N windows; all history if unset."
    )


class ReferencePi0(RequestModel):
    """pi0 is the positive ratio over a reference period (dates inclusive, model timezone)."""

    policy: Literal["reference"]
    start: Day
    end: Day

    @model_validator(mode="after")
    def _ordered(self) -> ReferencePi0:
        if self.start > self.end:
            raise ValueError("start must not be after end")
        return self


class FixedPi0(RequestModel):
    """pi0 is set by configuration (a contractual reference prior)."""

    policy: Literal["fixed"]
    value: OpenPrior = Field(description="The reference prior, between 0 and 1.")


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


# Each tunable setting once, so registration, update, the public representation and the docs
# cannot disagree: ModelSettings declares them, the three schemas derive from it.
Threshold = Annotated[
    float,
    AfterValidator(_check_finite),
    Field(description="A row is predicted positive iff score >= threshold."),
]


class ModelSettings(RequestModel):
    """Every setting of a model that can change after registration, with its default."""

    threshold: Threshold
    pi0: Pi0Policy = Field(
        default_factory=HistoricalPi0,
        description="How the reference prior pi0, at which calibrated metrics are expressed, "
        "is chosen.",
    )
    min_label_coverage: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="A window is mature (judged, and usable for pi0 and the reference) once "
        "this share of its rows is labelled.",
    )
    pi0_tolerance: float = Field(
        default=0.1,
        ge=0,
        description="Relative move of the historical pi0 that starts a new pi0 version "
        "(and recomputes the calibrated series).",
    )
    alert_floor: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Floor on the calibrated average precision: pages when a mature window's "
        "whole 95% interval lies below it. null: no floor.",
    )
    reference_windows: int = Field(
        default=14,
        ge=1,
        le=10_000,
        description="Usable windows an automatic reference holds (at least).",
    )
    reference_min_positives: int = Field(
        default=500,
        ge=1,
        le=100_000_000,
        description="Labelled positives an automatic reference holds (at least): it grows past "
        "reference_windows until it has them.",
    )
    detection_drop: float = Field(
        default=0.3,
        gt=0,
        lt=1,
        description="Relative drop of calibrated average precision the drop detector is tuned "
        "to catch soonest; lasting drops under about half of it are not paged.",
    )
    retention_windows: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Raw predictions of windows that started more than this many windows "
        "before the current one are deleted; the windows' metrics, sketches and verdicts are "
        "kept. null: raw predictions are kept forever.",
    )
    label_horizon_days: int | None = Field(
        default=None,
        ge=1,
        le=730,
        description="Days after a window ends after which a row with no fraud label counts as "
        "legitimate (a fraud-only feed: chargebacks and alert feedback, no explicit 'this was "
        "fine' labels); null: windows mature by label coverage instead.",
    )
    alert_capacity: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000_000,
        description="Alerts the team can check per window (its alert budget): precision at k "
        "is measured on the window's this many highest-scored rows. null: off (the metrics "
        "that need it are undefined).",
    )
    review_cost: float | None = Field(
        default=None,
        ge=0,
        le=MAX_AMOUNT,
        allow_inf_nan=False,
        description="Cost of reviewing one alert, in the currency of the rows' amounts: net "
        "savings are the fraud amount caught minus this times the alerts. null: off.",
    )


SETTINGS_FIELDS = tuple(name for name in ModelSettings.model_fields if name != "pi0")
"""The settings stored as plain columns of ``models`` (pi0 is spread over five)."""
NULLABLE_FIELDS = frozenset(
    name
    for name, info in ModelSettings.model_fields.items()
    if info.default is None and not info.is_required()
)
IMMUTABLE_FIELDS = ("name", "granularity", "timezone")


class ModelCreate(ModelSettings):
    """Body of ``POST /v1/models``."""

    name: ModelName
    granularity: Granularity = Field(default="day", description="Window length.")
    timezone: str = "UTC"

    _known_timezone = field_validator("timezone")(_check_timezone)


def _optional_fields(settings: type[ModelSettings]) -> dict[str, Any]:
    """Every setting as a PATCH field: its type and constraints, ``None`` when not sent (the
    descriptions come from the glossary, as for any request body)."""
    hints = get_type_hints(settings, include_extras=True)
    fields: dict[str, Any] = {}
    for name, info in settings.model_fields.items():
        # The constraints of a Field() (ge, le...) are in its metadata; an Annotated alias
        # (Threshold) carries its own, which the metadata repeats.
        hint = hints[name]
        constraints = [m for m in info.metadata if m not in get_args(hint)[1:]]
        fields[name] = ((Annotated[hint, *constraints] if constraints else hint) | None, None)
    return fields


# Generated from ModelSettings, so that a new setting is declared once; mypy sees the base.
if TYPE_CHECKING:
    _PatchFields = RequestModel
else:
    _PatchFields = create_model(
        "ModelPatchFields", __base__=RequestModel, **_optional_fields(ModelSettings)
    )


class ModelPatch(_PatchFields):
    """Body of ``PATCH /v1/models/{name}``: only the fields sent change; ``null`` is refused
    except for ``alert_floor``, where it removes the floor."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        **{name: info.description or "" for name, info in ModelSettings.model_fields.items()},
        **dict.fromkeys(IMMUTABLE_FIELDS, "Cannot be changed after registration: refused."),
    }

    if TYPE_CHECKING:  # the one generated field the services read by name
        pi0: Pi0Policy | None

    # Declared only to refuse them by name: stored rows are already keyed by windows floored
    # with this granularity and time zone, so changing either would silently split history.
    name: None = Field(default=None, exclude=True)
    granularity: None = Field(default=None, exclude=True)
    timezone: None = Field(default=None, exclude=True)

    @field_validator(*IMMUTABLE_FIELDS, mode="before")
    @classmethod
    def _refuse_immutable(cls, value: Any, info: ValidationInfo) -> None:
        raise ValueError(f"{info.field_name} cannot be changed after registration")

    @field_validator("*")
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        # Only an explicit null reaches this (defaults are not validated).
        if value is None and info.field_name not in NULLABLE_FIELDS:
            raise ValueError(f"{info.field_name} cannot be null (omit it to keep its value)")
        return value


class ModelOut(ModelSettings):
    """A monitored model as the API returns it (read from the ORM row)."""

    model_config = ConfigDict(extra="ignore", from_attributes=True)
    name: str = Field(description="The model's name (a slug).")
    granularity: Granularity
    timezone: str
    raw_kept_from: datetime | None = Field(
        default=None,
        description="Start of the oldest window whose raw predictions are kept (retention); "
        "null while none was deleted.",
    )
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="before")
    @classmethod
    def _pi0_from_columns(cls, data: Any) -> Any:
        if isinstance(data, dict) or not hasattr(data, "pi0_policy"):
            return data
        values = {name: getattr(data, name) for name in cls.model_fields if name != "pi0"}
        values["pi0"] = pi0_of(data)
        return values


def pi0_of(model: Any) -> dict[str, Any]:
    """The pi0 policy of a ``models`` row, in its API form."""
    if model.pi0_policy == "fixed":
        return {"policy": "fixed", "value": model.pi0_fixed}
    if model.pi0_policy == "reference":
        return {
            "policy": "reference",
            "start": model.pi0_reference_start,
            "end": model.pi0_reference_end,
        }
    return {"policy": "historical", "lookback_windows": model.pi0_lookback_windows}


def pi0_columns(policy: HistoricalPi0 | ReferencePi0 | FixedPi0) -> dict[str, Any]:
    """The ``models`` columns that store a pi0 policy."""
    return {
        "pi0_policy": policy.policy,
        "pi0_lookback_windows": (
            policy.lookback_windows if isinstance(policy, HistoricalPi0) else None
        ),
        "pi0_reference_start": policy.start if isinstance(policy, ReferencePi0) else None,
        "pi0_reference_end": policy.end if isinstance(policy, ReferencePi0) else None,
        "pi0_fixed": policy.value if isinstance(policy, FixedPi0) else None,
    }


class ModelDeleted(ResponseModel):
    """What ``DELETE /v1/models/{name}`` did."""

    name: str = Field(description="The deleted model's name, free again for a new model.")
    predictions_purged: bool = Field(
        description="True when its predictions are gone too; false while the worker removes "
        "them in the background, 50,000 rows per transaction (PostgreSQL)."
    )
