"""The metrics query API (read scope): series, one window, pi0, worker status."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.api.deps import ReadAccess, SessionDep
from app.metrics import METRIC_NAMES
from app.schemas.instants import Instant
from app.schemas.metrics import MetricName, MetricSeries, Pi0Out, StatusOut, WindowDetail
from app.schemas.segments import SegmentsOut
from app.services import metrics as service
from app.services import segments as segments_service

router = APIRouter(prefix="/v1/models/{name}", tags=["metrics"])

Segment = Annotated[str, Query(max_length=100, description="Segment; 'all' is the whole window.")]


@router.get("/metrics")
def get_metric_series(
    name: str,
    session: SessionDep,
    _: ReadAccess,
    *,
    metric: Annotated[
        str,
        Query(
            description="A metric of the registry.",
            json_schema_extra={"enum": list(METRIC_NAMES)},
        ),
    ] = "average_precision",
    segment: Segment = "all",
    start: Annotated[
        Instant | None,
        Query(alias="from", description="First window start (inclusive), with a UTC offset."),
    ] = None,
    end: Annotated[
        Instant | None,
        Query(alias="to", description="Last window start (exclusive), with a UTC offset."),
    ] = None,
    also: Annotated[
        list[MetricName] | None,
        Query(
            max_length=len(METRIC_NAMES),
            description="Other metrics of the same windows, repeated (`also=f1&also=alerts`): "
            "each comes back in `also` under its name, so a page with several charts asks once.",
        ),
    ] = None,
) -> MetricSeries:
    """One metric's regular and calibrated series, intervals, effects and verdicts (and, with
    `also`, other metrics' series over the same windows)."""
    return service.metric_series(
        session, name, metric=metric, segment=segment, start=start, end=end, also=also or []
    )


@router.get("/windows/{window_start}")
def get_window(
    name: str,
    window_start: Annotated[Instant, Path(description="The window's start, with a UTC offset.")],
    session: SessionDep,
    _: ReadAccess,
    segment: Segment = "all",
) -> WindowDetail:
    """Every metric of one window segment, and its regular and calibrated PR curves."""
    return service.window_detail(session, name, window_start, segment)


@router.get("/segments")
def get_segments(name: str, session: SessionDep, _: ReadAccess) -> SegmentsOut:
    """The model's segments ('all' first) with their computed windows, rows and newest window;
    a read naming another segment is a 404 listing these."""
    return segments_service.list_segments(session, name)


@router.get("/pi0")
def get_pi0(name: str, session: SessionDep, _: ReadAccess) -> Pi0Out:
    """The reference prior: current value, policy, versions and the history behind it."""
    return service.pi0_info(session, name)


@router.get("/status")
def get_status(name: str, session: SessionDep, _: ReadAccess) -> StatusOut:
    """Latest complete window, dirty windows waiting, worker lag and heartbeats."""
    return service.status(session, name)
