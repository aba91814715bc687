"""Schema of ``GET /v1/models/{name}/threshold-advice``: which threshold to set now.

Undefined values are ``null`` with a ``reason`` beside them, never NaN or a fake 0.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from app.metrics.types import Interval
from app.schemas.base import ResponseModel

FraudRateSource = Literal["measured", "early", "nowcast"]


class FraudRateNow(ResponseModel):
    """The fraud rate the advice is for, and where it comes from."""

    value: float = Field(description="The fraud rate now, in (0, 1).")
    ci: Interval | None = Field(description="Its 95% interval.")
    source: FraudRateSource = Field(
        description="measured: the newest mature window's labelled rows (its interval widened "
        "by the reference windows' fraud dispersion); early: the newest window still waiting "
        "for labels, estimated from its labels so far; nowcast: estimated from its scores alone."
    )
    window_start: datetime = Field(description="The window it was measured or estimated on.")


class ExpectedAt(ResponseModel):
    """What a window is expected to show at one threshold, at the fraud rate now."""

    threshold: float = Field(description="The threshold (a row is flagged iff score >= it).")
    precision: float | None = Field(description="Expected precision at the fraud rate now.")
    precision_ci: Interval | None = Field(description="Its 95% interval.")
    recall: float = Field(description="Expected recall (the reference's, at this threshold).")
    recall_ci: Interval | None = Field(description="Its 95% interval.")
    alerts: float = Field(description="Expected alerts in a window of rows_per_window rows.")
    alerts_interval: Interval = Field(
        description="95% prediction interval for one window's alerts (the curve's and the "
        "fraud rate's uncertainty, and a window's own variation, bursts included)."
    )
    value_recall: float | None = Field(
        default=None,
        description="Expected share of the fraud amount caught (the reference's, at this "
        "threshold; null: the reference's rows carry no amounts).",
    )
    value_recall_ci: Interval | None = Field(default=None, description="Its 95% interval.")


class ReferenceUsed(ResponseModel):
    """The frozen reference whose curve the advice reads."""

    version: int = Field(description="The reference version.")
    first_window: datetime = Field(description="Its first window.")
    last_window: datetime = Field(description="Its last window.")
    pi: float = Field(description="Its fraud rate (pooled over its windows).")
    precision: float | None = Field(
        description="Its precision at the model's threshold now: what restoring means."
    )


class ThresholdAdviceOut(ResponseModel):
    """``GET /v1/models/{name}/threshold-advice``."""

    model: str
    segment: str = Field(description="The segment advised on ('all': the whole window).")
    threshold: float = Field(description="The model's threshold now.")
    alert_capacity: int | None = Field(description="The team's alerts a window (null: none).")
    reason: str | None = Field(
        default=None, description="Why there is no advice at all (then all is null)."
    )
    fraud_rate: FraudRateNow | None = Field(
        default=None, description="The fraud rate the advice is for."
    )
    rows_per_window: float | None = Field(
        default=None, description="Rows a window holds: the median of the newest seven windows."
    )
    fraud_dispersion: float | None = Field(
        default=None,
        description="How much more a window's caught frauds vary than Poisson counts "
        "(variance over mean, >= 1), measured on the reference's windows.",
    )
    reference: ReferenceUsed | None = Field(
        default=None, description="The reference whose curve is read."
    )
    current: ExpectedAt | None = Field(
        default=None, description="What the threshold now will show."
    )
    within_capacity: ExpectedAt | None = Field(
        default=None,
        description="The lowest threshold whose alerts stay within alert_capacity in 97.5% of "
        "windows (null: see within_capacity_reason).",
    )
    within_capacity_reason: str | None = Field(
        default=None, description="Why within_capacity is null."
    )
    restoring_precision: ExpectedAt | None = Field(
        default=None,
        description="The lowest threshold whose expected precision is at least the "
        "reference's (null: see restoring_precision_reason).",
    )
    restoring_precision_reason: str | None = Field(
        default=None, description="Why restoring_precision is null."
    )
