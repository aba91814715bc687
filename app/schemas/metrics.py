"""Response schemas of the metrics query API (read scope).

Undefined values are ``null`` with a ``reason`` beside them, never NaN or a fake 0.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from app.metrics import METRIC_NAMES
from app.metrics.types import Interval
from app.monitoring.vocabulary import Pi0PolicyName, Signal, Verdict
from app.schemas.base import ResponseModel
from app.schemas.early import EarlyOut, EarlyPoint

MetricName = Annotated[str, WithJsonSchema({"type": "string", "enum": list(METRIC_NAMES)})]
"""A metric of the registry (app.metrics.registry): an enum in the OpenAPI document."""
CurveName = Literal["regular", "calibrated"]


class NowcastPoint(ResponseModel):
    """A window's label-free estimate of this metric (docs/before-the-labels.md, "Before the
    labels arrive")."""

    estimate: bool = True
    reference_version: int = Field(description="The reference the scores were fitted against.")
    pi: float | None = Field(description="Estimated fraud rate of all the window's rows.")
    pi_ci: Interval | None
    value: float | None = Field(
        description="Expected value of the metric (regular, at the estimated fraud rate); null "
        "for a metric the nowcast does not estimate."
    )
    ci: Interval | None = Field(description="Where the measured value should land (95%).")
    score_shift: bool
    fit_p_value: float | None = Field(description="The tests' smaller p-value, this window.")
    recent_fit_p_value: float | None = Field(
        description="The same, with the windows before it (up to 7 windows)."
    )
    reason: str | None = Field(description="Why a null value is undefined.")


class MetricValues(ResponseModel):
    """A metric's measured values in one window (a series point, or a window's detail): null
    while the window's labels are incomplete, or where the metric is undefined."""

    regular: float | None
    calibrated: float | None
    regular_ci: Interval | None
    calibrated_ci: Interval | None
    prior_effect: float | None
    performance_effect: float | None


class _PointCounts(ResponseModel):
    """What a series point's window holds: MetricPoint's first fields."""

    window_start: datetime
    n: int
    rows_total: int
    positives: int
    pi: float | None
    pi0: float | None = Field(description="Reference prior the calibrated value is at.")
    label_coverage: float | None


# pydantic lists the bases' fields from the last base to the first: the counts, then the values,
# then the verdict below, the order the series' JSON and its OpenAPI `required` have always had.
class MetricPoint(MetricValues, _PointCounts):
    """One window of a metric's series."""

    verdict: Verdict = Field(
        description="The window's verdict: issued once when the window is mature and after "
        "its reference, insufficient_data until then (docs/verdicts.md)."
    )
    judged: bool = Field(description="Whether the verdict is issued (final) or provisional.")
    mature: bool = Field(
        description="Whether the window's labels are complete. Until then its measured values "
        "(pi, regular, calibrated, effects) are null: they would rest on the labels that came "
        "first; `early` estimates what they will show."
    )
    reason: str | None = Field(description="Why a null value is undefined, or the verdict's.")
    nowcast: NowcastPoint | None = Field(
        default=None,
        description="The label-free estimate beside the measured value (windows after the "
        "segment's reference; kept once labels arrive, so the two can be compared).",
    )
    early: EarlyPoint | None = Field(
        default=None,
        description="What the window's complete labels are expected to show, from its labels so "
        "far (windows after the segment's reference, until judged).",
    )


class MetricSeries(ResponseModel):
    """``GET /v1/models/{name}/metrics``: one metric of one segment over time."""

    model: str
    metric: MetricName
    segment: str
    pi0: float | None
    pi0_version: int | None
    points: list[MetricPoint]
    also: dict[MetricName, list[MetricPoint]] = Field(
        default_factory=dict,
        description="The other metrics asked for with `also`, by name, each over the same "
        "windows as `points`: one request for a page's several series.",
    )


class WindowMetricOut(MetricValues):
    """One metric of one window segment."""

    reason: str | None


class EvidenceOut(ResponseModel):
    """The numbers behind a judged window's verdict (the drop detector, docs/verdicts.md)."""

    reference_version: int
    signals: list[Signal]
    drop_statistic: float = Field(description="The detector's statistic after this window.")
    gain_statistic: float
    threshold: float = Field(description="drop_statistic above this pages.")
    observed: float | None = Field(default=None, description="Calibrated AP of the window.")
    reference: float | None = Field(default=None, description="Calibrated AP of the reference.")
    expected: float | None = Field(
        default=None, description="Mean calibrated AP of windows this size with no change."
    )
    spread: float | None = Field(default=None, description="Their standard deviation.")
    margin: float | None = Field(
        default=None, description="Allowance for the reference's own uncertainty."
    )
    z: float | None = Field(default=None, description="Standardised deficit (> 0: worse).")
    weight: float | None = Field(
        default=None, description="The design drop in standard deviations of this window."
    )
    dispersion: float | None = Field(
        default=None,
        description="How much burstier than independent frauds the segment's windows are; the "
        "detector's step is divided by it (null: before it was measured, i.e. 1).",
    )


class NowcastValue(ResponseModel):
    """One expected metric of a nowcast."""

    value: float | None = Field(description="Expected value of the metric; null: undefined.")
    ci: Interval | None
    reason: str | None = None


class FitOut(ResponseModel):
    """How well the reference's mixture explains the window's scores."""

    g: float = Field(description="G statistic against the fitted mixture.")
    dof: int
    tilt: float = Field(description="Likelihood-ratio statistic for moved fraud scores.")
    inflation: float = Field(description="g's divisor for the reference's own sampling noise.")
    tilt_inflation: float = Field(description="tilt's divisor for the same.")
    dispersion: float = Field(
        default=1.0, description="g's divisor for the frauds' bursts at this window's fraud rate."
    )
    tilt_dispersion: float = Field(default=1.0, description="tilt's divisor for the same.")
    p_value: float
    tilt_p_value: float


class RecentFitOut(FitOut):
    """The misfit tests on several recent windows together."""

    windows: int = Field(description="Windows whose counts were added up (this one included).")


class DispersionOut(ResponseModel):
    """How much more the reference's fraud counts varied than independent rows' (bursts)."""

    bins: float = Field(description="Per bin group: variance over mean of the fraud counts.")
    tilt: float = Field(description="The same along the fraud scores' tilt (their mean).")
    windows: int = Field(description="Reference windows it was estimated from; 0: assumed 1.")


class NowcastOut(ResponseModel):
    """A window's label-free estimates, fitted to its scores alone (all rows, labelled or not)
    against its segment's reference, assuming only the fraud rate moved."""

    estimate: bool = Field(default=True, description="Always true: not measured.")
    reference_version: int
    rows: int | None = None
    flagged: int | None = Field(default=None, description="Rows at or above the threshold.")
    pi: float | None = Field(default=None, description="Maximum-likelihood fraud rate.")
    pi_ci: Interval | None = None
    adjusted_count: float | None = Field(
        default=None, description="Fraud rate by adjusted classify-and-count (Forman 2005)."
    )
    adjusted_count_ci: Interval | None = None
    expected: dict[MetricName, NowcastValue] = Field(
        default_factory=dict,
        description="Expected precision and F1 at the threshold and average precision.",
    )
    fit: FitOut | None = Field(default=None, description="The tests on this window alone.")
    fit_p_value: float | None = None
    recent_fit: RecentFitOut | None = Field(
        default=None,
        description="The same tests on this window and up to 6 before it, counts added up "
        "(a lasting change too small for one window); null for the first after the reference.",
    )
    recent_fit_p_value: float | None = None
    dispersion: DispersionOut | None = Field(
        default=None,
        description="The reference's fraud dispersion the tests divided out; null: stored "
        "before it was estimated (independent rows assumed).",
    )
    score_shift: bool = False
    reason: str | None = Field(default=None, description="Why there is no estimate.")


class PrCurve(ResponseModel):
    """A precision-recall curve, downsampled for plotting (recall ascending)."""

    recall: list[float]
    precision: list[float]
    thresholds: list[float]
    pi0: float | None = Field(description="Prior of the precision axis; null: as measured.")


class RocCurveOut(ResponseModel):
    """The ROC curve's corners, (0, 0) to (1, 1), downsampled for plotting (fpr ascending).
    Empty when the window lacks frauds or legitimate rows. The same at every fraud rate."""

    fpr: list[float] = Field(description="False positive rate at each corner, ascending.")
    tpr: list[float] = Field(description="True positive rate (recall) at each corner.")


class GainCurveOut(ResponseModel):
    """A PR-Gain curve (Flach & Kull 2015) from recall gain 0 to 1, downsampled for plotting;
    its area is ``pr_gain_auc``. Empty when the window lacks frauds or legitimate rows."""

    recall_gain: list[float] = Field(description="Recall gain at each point, 0 to 1.")
    precision_gain: list[float] = Field(
        description="Precision gain at each point (below 0: worse than flagging every row)."
    )
    pi0: float | None = Field(description="Prior of the recall gain; null: as measured.")


class WindowDetail(ResponseModel):
    """``GET /v1/models/{name}/windows/{window_start}``."""

    model: str
    window_start: datetime
    segment: str
    segments: list[str] = Field(description="Every segment stored for this window.")
    rows_total: int
    n: int
    positives: int
    negatives: int
    pi: float | None
    pi0: float | None
    pi0_version: int | None
    label_coverage: float | None
    mature: bool = Field(description="Whether the window's labels are complete (see series).")
    threshold: float
    verdict: Verdict
    verdict_reason: str | None
    judged_at: datetime | None = Field(description="When the verdict was issued; null: not yet.")
    evidence: EvidenceOut | None
    nowcast: NowcastOut | None = Field(
        description="Label-free estimates of this window (null: before or in its reference, "
        "or no reference with score counts yet)."
    )
    early: EarlyOut | None = Field(
        description="Early estimates from the labels so far (null: judged, before its reference, "
        "or no label times)."
    )
    computed_at: datetime
    duration_seconds: float
    counts: dict[str, int] | None
    metrics: dict[MetricName, WindowMetricOut]
    curves: dict[CurveName, PrCurve] = Field(description="'regular' and 'calibrated' PR curves.")
    roc: RocCurveOut | None = Field(
        default=None, description="The ROC curve; null while the measured values are withheld."
    )
    pr_gain: dict[CurveName, GainCurveOut] = Field(
        default_factory=dict,
        description="'regular' and 'calibrated' PR-Gain curves (empty while withheld).",
    )


class Pi0VersionOut(ResponseModel):
    """One version of a model's reference prior."""

    version: int
    value: float = Field(description="pi0 of this version.")
    policy: Pi0PolicyName
    windows_used: int
    rows_used: int
    positives_used: int
    computed_at: datetime


class Pi0HistoryPoint(ResponseModel):
    """A window's label counts, and whether the current policy uses it for pi0."""

    window_start: datetime
    labelled: int
    positives: int
    pi: float | None
    label_coverage: float | None
    used: bool


class Pi0Out(ResponseModel):
    """``GET /v1/models/{name}/pi0``."""

    model: str
    policy: Pi0PolicyName
    tolerance: float
    current: Pi0VersionOut | None
    candidate: float | None = Field(description="What the policy gives on today's history.")
    versions: list[Pi0VersionOut]
    history: list[Pi0HistoryPoint]


class WorkerOut(ResponseModel):
    """A worker's last heartbeat."""

    worker_id: str
    started_at: datetime
    last_seen_at: datetime
    stopped_at: datetime | None = Field(
        description="When the worker shut down cleanly (SIGTERM); null while it runs."
    )
    windows_computed: int
    failures: int
    last_duration_seconds: float | None


class ParkedWindowOut(ResponseModel):
    """A window the worker parked, and why."""

    window_start: datetime = Field(description="The parked window.")
    attempts: int = Field(description="Failed computations in a row.")
    error: str = Field(description="The error of the last one.")


class StatusOut(ResponseModel):
    """``GET /v1/models/{name}/status``."""

    model: str
    latest_complete_window: datetime | None
    latest_computed_at: datetime | None
    windows: int
    dirty_windows: int
    failing_windows: int
    parked_windows: int = Field(
        description="Windows the worker gave up on: their computation failed "
        "three times for a reason retrying cannot change (see `parked`). They are computed "
        "again when their rows, their labels or the model's settings change."
    )
    parked: list[ParkedWindowOut] = Field(
        description="The newest parked windows (at most 20), with the error that parked them."
    )
    oldest_dirty_update: datetime | None
    worker_lag_seconds: float = Field(
        description="Age of the oldest unprocessed change; 0 if none."
    )
    workers: list[WorkerOut]
