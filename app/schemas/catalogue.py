"""Schemas of the metric catalogue (``GET /v1/models/{name}/metric-catalogue``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from app.metrics.types import Interval
from app.schemas.base import ResponseModel


class SensitivityOut(ResponseModel):
    """Seed paper's imbalance sensitivity between 1:1 and the model's 1:r (0: agnostic)."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "regular": "Sensitivity of the regular metric.",
        "calibrated": "Sensitivity of the calibrated metric.",
        "reason": "Why a value is null.",
    }

    regular: float | None
    calibrated: float | None
    reason: str | None


class SwingOut(ResponseModel):
    """The metric as measured on the model's pooled curve at the lowest and the highest fraud
    rate of the period's windows: how far it moves when only the fraud rate moves."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "at_pi_lo": "The metric at the lowest window fraud rate.",
        "at_pi_hi": "The metric at the highest window fraud rate.",
    }

    at_pi_lo: float | None
    at_pi_hi: float | None


class CatalogueEntry(ResponseModel):
    """One metric: what it is and how much the fraud rate moves it."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "name": "The metric's machine name.",
        "label": "Its human-readable name.",
        "lo": "Lowest value it can take; null: unbounded.",
        "hi": "Highest value it can take; null: unbounded.",
        "higher_is_better": "true/false for quality measures, null for descriptive ones.",
        "prior_invariant": "Whether the fraud rate leaves it unchanged.",
        "sensitivity": "How much the class ratio moves it.",
        "swing": "The metric at the ends of the fraud-rate range; null: not in the registry.",
    }

    name: str
    label: str
    lo: float | None
    hi: float | None
    higher_is_better: bool | None
    prior_invariant: bool
    in_registry: bool = Field(description="False: a seed-paper metric listed for comparison.")
    sensitivity: SensitivityOut
    swing: SwingOut | None


class CatalogueOut(ResponseModel):
    """``GET /v1/models/{name}/metric-catalogue``."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "model": "The model's name.",
        "metrics": "One entry per metric.",
    }

    model: str
    pi: float = Field(description="The class ratio's fraud rate.")
    ratio: float = Field(description="Negatives per positive, r = (1 - pi) / pi.")
    pi0: float = Field(description="Prior of the calibrated surfaces.")
    range: Interval = Field(
        description="The lowest and highest window fraud rate: where the swings are taken."
    )
    metrics: list[CatalogueEntry]
