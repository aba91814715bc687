"""Schema of "which metric to trust" (``GET /v1/models/{name}/metric-trust``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from app.schemas.base import ResponseModel


class SensitivityCurveOut(ResponseModel):
    """One metric's imbalance sensitivity s(r) at each ratio of ``ratios``."""

    metric: str = Field(description="A metric of the seed paper's contingency space.")
    sensitivity: list[float] = Field(
        description="s(r): the volume between its surfaces at 1:1 and 1:r, in [0, 1)."
    )


class SurfaceOut(ResponseModel):
    """A metric over contingency space at the model's ratio, rescaled to [0, 1]."""

    metric: str = Field(description="The metric drawn.")
    centres: list[float] = Field(description="Cell centres of both axes (TNR and TPR).")
    values: list[list[float | None]] = Field(
        description="values[i][j] at TPR = centres[i], TNR = centres[j]; null: 0/0."
    )


class OperatingPointOut(ResponseModel):
    """A mature window's operating point at the threshold, in contingency space."""

    window_start: datetime = Field(description="The window.")
    tnr: float = Field(description="True negative rate: 1 - FPR.")
    tpr: float = Field(description="True positive rate: recall.")


class TrustOut(ResponseModel):
    """Which metric to trust at this model's class ratio (the seed paper on class-imbalance
    sensitivity): every metric's s(r) over the ratio, one metric's surface at the model's
    ratio, and the model's windows on it."""

    model: str
    segment: str = Field(description="The segment read.")
    pi: float = Field(description="The period's fraud rate.")
    ratio: float = Field(description="Its imbalance ratio: negatives per positive, (1 - pi) / pi.")
    pi0: float = Field(description="The prior of the calibrated metrics.")
    ratios: list[float] = Field(description="Ratios of the curves, 1 to at least 10^4 (log).")
    curves: list[SensitivityCurveOut] = Field(description="s(r) of every metric.")
    surface: SurfaceOut = Field(description="The asked metric's surface at the model's ratio.")
    windows: list[OperatingPointOut] = Field(description="The period's mature windows.")
