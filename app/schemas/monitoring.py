"""Schemas of the drop detector's API: a model's references and its alert states."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import Field, model_validator

from app.monitoring.vocabulary import AlertState, ReferenceKind, Signal, Verdict
from app.schemas.base import RequestModel, ResponseModel
from app.schemas.instants import Day


class AutomaticReference(RequestModel):
    """Every segment's first usable windows, from ``start`` (e.g. the day a retrained model went
    live) or from the model's first window. A usable window is mature and has positives; the
    reference takes the model's ``reference_windows`` of them, and more until it holds
    ``reference_min_positives`` positives."""

    kind: Literal["automatic"]
    start: Day | None = Field(default=None, description="First day (model time zone).")


class PeriodReference(RequestModel):
    """Every segment's usable windows in a period (days inclusive, model time zone)."""

    kind: Literal["period"]
    start: Day
    end: Day

    @model_validator(mode="after")
    def _ordered(self) -> PeriodReference:
        if self.start > self.end:
            raise ValueError("start must not be after end")
        return self


class RecentReference(RequestModel):
    """Accept the current state as normal: every segment's newest usable windows (as many as an
    automatic reference takes), counted back from now."""

    kind: Literal["recent"]


ReferenceRequest = Annotated[
    AutomaticReference | PeriodReference | RecentReference, Field(discriminator="kind")
]


class ReferenceVersionOut(ResponseModel):
    """One version of a model's reference specification."""

    version: int
    kind: ReferenceKind
    start: date | None = Field(description="First day (automatic, period).")
    end: date | None = Field(description="Last day, inclusive (period).")
    as_of: datetime | None = Field(description="recent: the windows before this instant.")
    created_at: datetime


class SegmentReferenceOut(ResponseModel):
    """A segment's reference under the current version: frozen, or still being collected."""

    segment: str
    ready: bool
    first_window: datetime | None
    last_window: datetime | None
    windows: int
    positives: int
    calibrated_average_precision: float | None = Field(
        description="The reference's calibrated AP at the current pi0 (what windows are "
        "compared with); null until frozen."
    )
    reason: str | None = Field(description="Why it is not frozen yet.")


class ReferenceOut(ResponseModel):
    """``GET``/``POST /v1/models/{name}/reference``."""

    model: str
    current: ReferenceVersionOut
    versions: list[ReferenceVersionOut]
    segments: list[SegmentReferenceOut]


class AwaitingLabelsOut(ResponseModel):
    """Recent data not mature yet: its verdicts are still to come."""

    windows: int
    rows: int


class EarlyAlertOut(ResponseModel):
    """The drop statistic continued through the windows whose labels are still arriving, with
    their early evidence (docs/before-the-labels.md, "Early pages"): what pages before the
    windows are judged."""

    drop_evidence: float = Field(description="The continued statistic: it pages above threshold.")
    paging: bool = Field(description="Whether it pages (with its hysteresis across looks).")
    windows: int = Field(description="Windows not judged yet whose early evidence it adds.")
    as_of: datetime | None = Field(description="The look it was taken at (the model's clock).")


class SegmentAlertOut(ResponseModel):
    """The alert state of one segment: what pages, and the newest mature window it rests on."""

    segment: str
    state: AlertState
    signals: list[Signal] = Field(
        description="What holds the drop state: cusum (judged windows' evidence), early (the "
        "same statistic continued through windows whose labels are still arriving), floor."
    )
    reason: str | None
    reference_version: int
    reference_average_precision: float | None
    drop_evidence: float = Field(description="The drop detector's statistic (judged windows).")
    threshold: float | None = Field(description="drop_evidence above this pages.")
    early: EarlyAlertOut | None = Field(
        default=None, description="The statistic continued through the early evidence."
    )
    evidence_windows: int = Field(
        description="Windows judged against the current reference that had positives to weigh."
    )
    newest_judged_window: datetime | None
    newest_judged_verdict: Verdict | None
    episode_start: datetime | None = Field(description="First window of the current drop.")
    awaiting_labels: AwaitingLabelsOut


class AlertsOut(ResponseModel):
    """``GET /v1/models/{name}/alerts``: the model's alert state per segment, worst first."""

    model: str
    state: AlertState = Field(description="drop if any segment drops, else ok, else warming_up.")
    segments: list[SegmentAlertOut]
