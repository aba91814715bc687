"""Response schemas of the early estimates: what a window's labels so far say its complete
labels will show (docs/before-the-labels.md, "Before the labels are complete")."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from app.metrics.types import Interval
from app.schemas.base import ResponseModel


class LabelsSoFar(ResponseModel):
    """The labels a window has received by the look of its estimate."""

    frauds: int = Field(description="Rows labelled fraud.")
    legitimate: int = Field(description="Rows labelled legitimate (e.g. alerts cleared).")
    by_source: dict[str, int] = Field(
        description="Labels per source: feedback, chargeback, confirmed."
    )


class EstimatedValue(ResponseModel):
    """One estimated quantity and its 95% interval."""

    value: float | None = Field(description="The estimate.")
    ci: Interval | None = Field(description="Its 95% interval.")
    reason: str | None = Field(default=None, description="Why a null value is undefined.")


class FeedbackPrecisionOut(ResponseModel):
    """The alerts' precision as the investigators' feedback shows it (reviewed alerts only:
    it says nothing about the frauds the model missed and enters no other value)."""

    value: float = Field(description="Confirmed frauds among the reviewed alerts.")
    ci: Interval = Field(description="Wilson 95% interval.")
    reviewed: int = Field(description="Flagged rows the investigators gave a verdict on.")
    confirmed: int = Field(description="Of them, confirmed frauds.")


class EarlyEvidenceOut(ResponseModel):
    """The window's early evidence about a drop of calibrated AP (docs/before-the-labels.md,
    "Early pages")."""

    frauds: int = Field(description="Fraud labels it rests on.")
    llr: float = Field(description="Log-likelihood ratio: the design drop against no drop.")
    z: float = Field(description="Standardised shift of the frauds' scores (positive: lower).")
    dispersion: float = Field(description="How much burstier than independent frauds are.")
    increment: float = Field(description="What it adds to the drop statistic (llr/dispersion).")


class ScoresOnlyOut(ResponseModel):
    """The fraud rate from the window's scores alone (its nowcast) beside the labels' estimate.
    They are not pooled: the scores-only rate assumes the reference's fraud scores still hold,
    which fails exactly when the model got worse (its frauds then read as less fraud)."""

    pi: float = Field(description="Fraud rate estimated from the scores alone.")
    pi_ci: Interval | None = Field(description="Its 95% interval.")
    disagreement_z: float | None = Field(
        description="(labels' pi - scores' pi) over its standard error: well above 2, the "
        "labels say more fraud than the scores explain (frauds scoring lower than the "
        "reference's)."
    )


class EarlyOut(ResponseModel):
    """A window's early estimates: what its complete labels are expected to show."""

    estimate: Literal[True] = Field(
        default=True, description="Always true: estimated from labels still arriving."
    )
    as_of: datetime = Field(description="The look: labels that arrived by then are counted.")
    look: int = Field(description="Looks (days, or window lengths) since the window ended.")
    reference_version: int = Field(description="The reference the estimate was made against.")
    pi0: float | None = Field(description="Prior the calibrated AP is expressed at.")
    labels_so_far: LabelsSoFar = Field(description="The labels counted at this look.")
    frauds_total: EstimatedValue = Field(description="The window's eventual fraud labels.")
    pi: EstimatedValue = Field(description="The fraud rate its complete labels will show.")
    precision: EstimatedValue = Field(description="Precision at the threshold.")
    recall: EstimatedValue = Field(description="Recall at the threshold.")
    average_precision: EstimatedValue = Field(description="Calibrated AP at pi0.")
    bursts: float | None = Field(
        default=None,
        description="How many frauds a burst counted as (1: independent): the larger of how "
        "alike the reference's frauds scored and how much the complete windows' labels arrived "
        "together; the flagged cells count their own labels' (the unreviewed alerts hide one by "
        "one). Null: no estimate, or stored before it was kept.",
    )
    alert_precision_feedback: FeedbackPrecisionOut | None = Field(
        description="The reviewed alerts' precision, the day after (null: none reviewed yet)."
    )
    evidence: EarlyEvidenceOut | None = None
    scores_only: ScoresOnlyOut | None = Field(
        default=None, description="The scores-only fraud rate beside it (null: no nowcast)."
    )
    reason: str | None = Field(default=None, description="Why there is no estimate.")


class EarlyPoint(ResponseModel):
    """A series point's early estimate of its metric."""

    estimate: Literal[True] = Field(default=True, description="Always true: not measured.")
    as_of: datetime = Field(description="The look: labels that arrived by then are counted.")
    look: int = Field(description="Looks (days, or window lengths) since the window ended.")
    variant: Literal["regular", "calibrated"] | None = Field(
        description="Which of the point's values it estimates (calibrated: at pi0)."
    )
    value: float | None = Field(description="What the complete labels are expected to show.")
    ci: Interval | None = Field(description="Its 95% interval.")
    pi: float | None = Field(description="The estimated fraud rate.")
    pi_ci: Interval | None = Field(description="Its 95% interval.")
    reason: str | None = Field(description="Why a null value is undefined.")
