"""Schemas of the segments side by side (``GET /v1/models/{name}/segments/compare``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from app.metrics.types import Interval
from app.schemas.base import ResponseModel


class SegmentMetricOut(ResponseModel):
    """One calibrated metric of one segment, and its difference to the baseline."""

    value: float | None = Field(description="The segment's value calibrated to the prior.")
    ci: Interval | None = Field(
        description="95% bootstrap interval of the value (rows drawn; widened by the spread "
        "the windows show)."
    )
    difference: float | None = Field(description="value - the baseline's value.")
    difference_ci: Interval | None = Field(
        description="95% interval of the difference (null for the baseline itself)."
    )
    decided: bool | None = Field(
        description="Whether the difference's interval leaves out 0; null without one."
    )
    reason: str | None = Field(description="Why a value is null.")


class SegmentSideOut(ResponseModel):
    """One segment over the period: the fraud rate it runs at, and its calibrated metrics."""

    segment: str = Field(description="The segment; 'all' is the whole model.")
    windows: int = Field(description="Mature windows of the period that hold this segment.")
    labelled: int = Field(description="Labelled rows pooled.")
    positives: int = Field(description="Frauds among them.")
    pi: float | None = Field(description="The segment's own fraud rate over the period.")
    metrics: dict[str, SegmentMetricOut]


class SegmentCompareOut(ResponseModel):
    """Every segment of a model at one reference prior, against the whole model or a segment
    (Siblini et al. 2020's first use case: sub-populations compared at one prior)."""

    model: str
    prior: float = Field(description="The prior every value is calibrated to.")
    prior_source: Literal["pi0", "pooled"] = Field(
        description="'pi0': the model's reference prior; 'pooled': the whole period's fraud "
        "rate, while the model has no pi0 yet."
    )
    baseline: str = Field(description="What the differences are taken to: 'all' or a segment.")
    first_window: datetime = Field(description="Start of the period's first mature window.")
    last_window: datetime = Field(description="Start of its last mature window.")
    windows: int = Field(description="Mature windows pooled.")
    replicates: int = Field(description="Bootstrap replicates behind the intervals.")
    whole: SegmentSideOut = Field(description="The whole model ('all').")
    segments: list[SegmentSideOut] = Field(description="The named segments, by name.")
