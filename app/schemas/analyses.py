"""Schemas of the analyses API: what-if priors, champion vs challenger, the metric catalogue.

Undefined values are ``null`` with a ``reason`` beside them, never NaN or a fake 0.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from app.metrics.types import Interval
from app.schemas.base import RequestModel, ResponseModel
from app.schemas.instants import Instant
from app.schemas.priors import OpenPrior

ClosedPrior = Annotated[float, Field(ge=0.0, le=1.0)]


class RangeIn(RequestModel):
    """An uncertain fraud-rate range; both ends left out: the period's history (mean +- 3 std
    of its windows' fraud rates, Lampert section 5.1)."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "pi_lo": "Lowest fraud rate of the range; null with pi_hi: the history's.",
        "pi_hi": "Highest fraud rate of the range; null with pi_lo: the history's.",
    }

    model_config = ConfigDict(extra="forbid")
    pi_lo: ClosedPrior | None = None
    pi_hi: ClosedPrior | None = None
    weight: list[tuple[ClosedPrior, Annotated[float, Field(ge=0.0)]]] | None = Field(
        default=None,
        max_length=1000,
        description="Optional weight w(pi) as (pi, w) points, linear between them and 0 "
        "outside: how plausible each fraud rate is (e.g. a forecast's density).",
    )

    @model_validator(mode="after")
    def _both_or_neither(self) -> RangeIn:
        if (self.pi_lo is None) != (self.pi_hi is None):
            raise ValueError("give both pi_lo and pi_hi, or neither (the history's range)")
        if self.pi_lo is not None and self.pi_hi is not None and self.pi_lo > self.pi_hi:
            raise ValueError("pi_lo must not exceed pi_hi")
        return self


class TrajectoryIn(RequestModel):
    """A fraud-rate trajectory pi(t) as (t, pi) points, t strictly increasing (any unit)."""

    model_config = ConfigDict(extra="forbid")
    points: list[tuple[float, ClosedPrior]] = Field(min_length=2, max_length=10_000)
    interpolation: Literal["linear", "log"] = Field(
        default="linear",
        description="Between points: linear in pi, or linear in log pi (steady growth such "
        "as 'fraud doubles every month'; every pi must then be above 0).",
    )

    @model_validator(mode="after")
    def _increasing(self) -> TrajectoryIn:
        times = [t for t, _ in self.points]
        if any(b <= a for a, b in itertools.pairwise(times)):
            raise ValueError("trajectory times must be strictly increasing")
        return self


class WhatIfRequest(RequestModel):
    """``POST /v1/models/{name}/whatif``: the period's pooled curve at other fraud rates."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "segment": "The segment; 'all' is the whole window.",
        "trajectory": "A fraud rate over time to follow (eq. 4); null: none.",
        "replicates": "Bootstrap replicates of the intervals.",
    }

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    segment: str = Field(default="all", max_length=100)
    start: Instant | None = Field(
        default=None, alias="from", description="First window start (inclusive), with a UTC offset."
    )
    end: Instant | None = Field(
        default=None, alias="to", description="Last window start (exclusive), with a UTC offset."
    )
    priors: list[OpenPrior] = Field(
        default_factory=list,
        max_length=20,
        description="Fraud rates to re-express every metric at; empty: pi0 and the newest "
        "mature window's fraud rate.",
    )
    range: RangeIn | None = Field(default_factory=RangeIn, description="null: no range analysis.")
    trajectory: TrajectoryIn | None = None
    intervals: bool = Field(
        default=True, description="Bootstrap intervals at each prior and over the range."
    )
    replicates: int = Field(default=1000, ge=100, le=10_000)


class PeriodOut(ResponseModel):
    """The mature windows an analysis pooled."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "segment": "The segment pooled.",
        "first_window": "Start of the period's first mature window.",
        "last_window": "Start of its last one.",
        "windows": "Mature windows pooled.",
        "labelled": "Labelled rows pooled.",
        "positives": "Positives pooled.",
        "current_window": "Start of the newest mature window.",
        "pi0_version": "Version of that pi0.",
        "threshold": "The model's threshold.",
    }

    segment: str
    first_window: datetime
    last_window: datetime
    windows: int
    labelled: int
    positives: int
    pi: float = Field(description="The period's fraud rate (positives / labelled rows).")
    pi_mean: float = Field(description="Mean of the windows' fraud rates.")
    pi_std: float = Field(description="Their population standard deviation.")
    current_pi: float = Field(description="Fraud rate of the newest mature window.")
    current_window: datetime
    pi0: float | None = Field(description="The model's current reference prior.")
    pi0_version: int | None
    threshold: float


class ValueOut(ResponseModel):
    """One metric's value, its bootstrap interval (95% unless asked otherwise) and why null."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "value": "The value; null: undefined (see reason).",
        "ci": "95% bootstrap interval; null: not asked or undefined.",
        "reason": "Why the value is null.",
    }

    value: float | None
    ci: Interval | None = None
    reason: str | None = None


class PriorOut(ResponseModel):
    """Every registry metric as the period's pooled curve would measure at fraud rate ``pi``."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "pi": "The fraud rate the metrics are re-expressed at.",
        "metrics": "Per metric name: its value there.",
    }

    pi: float
    metrics: dict[str, ValueOut]


class RangeOut(ResponseModel):
    """Metrics over an uncertain fraud-rate range (Lampert eq. 7, 20, 21)."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "pi_lo": "Lowest fraud rate of the range.",
        "pi_hi": "Highest fraud rate of the range.",
        "source": "Where the range comes from: the period's history or the request.",
        "weighted": "Whether the request weighted the fraud rates.",
        "average_precision_at_ends": "AP at pi_lo and at pi_hi.",
        "reason": "Why a value is null.",
    }

    pi_lo: float
    pi_hi: float
    source: Literal["history", "request"]
    weighted: bool
    precision: float | None = Field(
        description="Integrated precision at the threshold: its mean over the range (eq. 7)."
    )
    precision_ci: Interval | None = Field(
        default=None, description="Bootstrap interval of the integrated precision."
    )
    precision_at_ends: tuple[float | None, float | None] = Field(
        description="Precision at pi_lo and at pi_hi (null where undefined)."
    )
    average_precision: float = Field(
        description="Area under the integrated P-R curve: the mean of AP over the range."
    )
    average_precision_ci: Interval | None = Field(
        default=None, description="Bootstrap interval of the area."
    )
    average_precision_at_ends: tuple[float | None, float | None]
    min_average_precision: float = Field(
        description="The minimum achievable area over the range (eq. 20)."
    )
    normalised_average_precision: float | None = Field(
        description="(area - minimum) / (1 - minimum) (eq. 21): 0 worst, 1 perfect."
    )
    random_average_precision: float = Field(
        description="A random classifier's area over the range, the baseline to beat (eq. 22): "
        "the mean fraud rate of the range, weighted when a weight is given."
    )
    reason: str | None


class TrajectoryOut(ResponseModel):
    """Mean metrics along a known fraud-rate trajectory (Lampert eq. 4)."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "t_start": "First time of the trajectory.",
        "t_end": "Last time of the trajectory.",
        "interpolation": "Between points: linear in pi, or in log pi.",
        "reason": "Why a value is null.",
    }

    t_start: float
    t_end: float
    interpolation: Literal["linear", "log"]
    precision: float | None = Field(description="Temporal precision at the threshold.")
    precision_ci: Interval | None = Field(
        default=None, description="Bootstrap interval of the temporal precision."
    )
    average_precision: float = Field(description="The mean of AP(pi(t)) over the span.")
    average_precision_ci: Interval | None = Field(
        default=None, description="Bootstrap interval of the temporal AP."
    )
    random_average_precision: float = Field(
        description="A random classifier's temporal AP, the baseline to beat (eq. 15): the "
        "mean of pi(t) over the span."
    )
    reason: str | None


class WhatIfOut(ResponseModel):
    """The period's pooled curve re-expressed at other fraud rates."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "model": "The model's name.",
        "period": "The pooled period.",
        "priors": "One entry per fraud rate asked (or pi0 and the newest rate).",
        "range": "The range analysis; null: not asked.",
        "trajectory": "The trajectory analysis; null: not asked.",
    }

    model: str
    period: PeriodOut
    priors: list[PriorOut]
    range: RangeOut | None
    trajectory: TrajectoryOut | None


Leader = Literal["champion", "challenger", "tie"]


class ComparisonOut(ResponseModel):
    """Average precision of both models at a fraud rate (or over a range), and who wins."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "champion": "The champion's AP.",
        "challenger": "The challenger's AP.",
    }

    pi: float | None = Field(description="The fraud rate (null for a range).")
    champion: float
    challenger: float
    difference: float = Field(description="challenger - champion.")
    ci: Interval | None = Field(description="Bootstrap interval of the difference.")
    leader: Leader = Field(description="Whose AP is higher (the point values).")
    decided: bool = Field(description="Whether the interval excludes 0.")


class RangeComparisonOut(ComparisonOut):
    """Areas under the integrated P-R curves over the range, and flips inside it."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "champion": "The champion's AP over the range.",
        "challenger": "The challenger's AP over the range.",
        "pi_lo": "Lowest fraud rate of the range.",
        "pi_hi": "Highest fraud rate of the range.",
    }

    pi_lo: float
    pi_hi: float
    flips_inside: list[float] = Field(description="Rank inversions inside the range.")


class InversionOut(ResponseModel):
    """A fraud rate at which the two models' AP order flips (Lampert Algorithm 1)."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "pi": "The fraud rate where the AP order flips.",
    }

    pi: float
    below: Leader = Field(description="The leader just below pi.")
    above: Leader = Field(description="The leader just above pi.")


class SidePoint(ResponseModel):
    """One window of the side-by-side series."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "window_start": "The window's start, a UTC instant.",
        "pi": "The window's fraud rate.",
        "champion": "The champion's value in this window.",
        "challenger": "The challenger's value in this window.",
    }

    window_start: datetime
    pi: float | None
    champion: ValueOut
    challenger: ValueOut
    difference: float | None = Field(description="challenger - champion, same pi0.")
    difference_ci: Interval | None = Field(
        default=None,
        description=(
            "95% interval of the difference from both windows' bootstrap intervals (MOVER); "
            "null where either has none."
        ),
    )
    decided: bool | None = Field(
        default=None, description="Whether difference_ci excludes 0 (null without an interval)."
    )


class CompareOut(ResponseModel):
    """``GET /v1/models/{name}/compare``: champion against challenger over one period."""

    field_glossary: ClassVar[Mapping[str, str]] = {
        "champion": "The champion model's name.",
        "challenger": "The challenger model's name.",
        "metric": "The metric compared.",
        "champion_period": "The champion's pooled period.",
        "challenger_period": "The challenger's pooled period.",
        "at_pi0": "The comparison at pi0; null without one.",
        "at_current_pi": "The comparison at the newest mature fraud rate.",
    }

    champion: str
    challenger: str
    metric: str
    pi0: float | None = Field(description="The champion's pi0, where both are compared.")
    champion_period: PeriodOut
    challenger_period: PeriodOut
    series: list[SidePoint] = Field(
        description="Calibrated values of both models per mature window (either model's)."
    )
    at_pi0: ComparisonOut | None
    at_current_pi: ComparisonOut
    over_range: RangeComparisonOut | None = Field(
        description="Over the champion's history range; null without two windows' spread."
    )
    inversions: list[InversionOut] = Field(description="Every flip of the AP order in (0, 1).")
    summary: str = Field(description="The comparison in one sentence.")
