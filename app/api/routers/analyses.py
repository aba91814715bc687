"""The analyses API (read scope): what-if priors, champion vs challenger, the metric catalogue,
threshold advice."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AfterValidator

from app.api.deps import ReadAccess, SessionDep
from app.schemas.advice import ThresholdAdviceOut
from app.schemas.analyses import CompareOut, WhatIfOut, WhatIfRequest
from app.schemas.catalogue import CatalogueOut
from app.schemas.instants import Instant
from app.schemas.priors import check_prior
from app.schemas.segment_compare import SegmentCompareOut
from app.schemas.trust import TrustOut
from app.services import catalogue as catalogue_service
from app.services import compare as compare_service
from app.services import segment_compare as segment_compare_service
from app.services import threshold_advice as advice_service
from app.services import trust as trust_service
from app.services import whatif as whatif_service

router = APIRouter(prefix="/v1/models/{name}", tags=["analyses"])

Segment = Annotated[str, Query(max_length=100, description="Segment; 'all' is the whole window.")]
# Instants as the series' are: with a UTC offset and within UTC's years (a naive one, or
# 0001-01-01T03:02+07:02, reached the database and was a 500: schemathesis found the second).
From = Annotated[
    Instant | None,
    Query(alias="from", description="First window start (inclusive), with a UTC offset."),
]
To = Annotated[
    Instant | None,
    Query(alias="to", description="Last window start (exclusive), with a UTC offset."),
]


@router.post("/whatif")
def post_what_if(name: str, body: WhatIfRequest, session: SessionDep, _: ReadAccess) -> WhatIfOut:
    """The period's mature windows pooled, re-expressed at other fraud rates: every metric at
    named priors (with bootstrap intervals), integrated precision and P-R area over an
    uncertain range (default: the history's mean +- 3 std), temporal precision along a
    trajectory. A read: nothing is stored."""
    return whatif_service.what_if(session, name, body)


@router.get("/compare")
def get_compare(
    name: str,
    session: SessionDep,
    principal: ReadAccess,
    *,
    challenger: Annotated[str, Query(description="The model compared against this one.")],
    metric: Annotated[
        str, Query(description="Registry metric of the side-by-side series.")
    ] = "average_precision",
    segment: Segment = "all",
    start: From = None,
    end: To = None,
    replicates: Annotated[int, Query(ge=100, le=10_000)] = 1000,
) -> CompareOut:
    """This model (the champion) against a challenger over the same period: calibrated series
    side by side, the AP difference with a bootstrap interval at pi0, at the current fraud rate
    and over the history's range, and every fraud rate where the AP order flips."""
    principal.require_model(challenger)
    return compare_service.compare(
        session,
        name,
        challenger,
        segment=segment,
        start=start,
        end=end,
        metric=metric,
        replicates=replicates,
    )


@router.get("/segments/compare")
def get_segments_compare(
    name: str,
    session: SessionDep,
    _: ReadAccess,
    *,
    baseline: Annotated[
        str,
        Query(
            max_length=100,
            description="What each segment is compared to: 'all' (the whole model) or a segment.",
        ),
    ] = "all",
    start: From = None,
    end: To = None,
    replicates: Annotated[int, Query(ge=100, le=10_000)] = 1000,
) -> SegmentCompareOut:
    """Every segment side by side at the model's pi0 (Siblini et al.'s first use case): the
    fraud rate each runs at, its calibrated metrics over the period's mature windows, and the
    difference to the whole model or to one segment with a 95% bootstrap interval (one joint
    bootstrap: a segment is part of the whole; widened by how much more the windows vary than
    their rows, as when frauds come in bursts). A read: nothing is stored."""
    return segment_compare_service.segment_comparison(
        session, name, baseline=baseline, period=(start, end), replicates=replicates
    )


@router.get("/metric-trust")
def get_metric_trust(
    name: str,
    session: SessionDep,
    _: ReadAccess,
    *,
    metric: Annotated[
        str, Query(max_length=100, description="The metric whose surface is drawn.")
    ] = "f1",
    segment: Segment = "all",
    start: From = None,
    end: To = None,
) -> TrustOut:
    """Which metric to trust at this model's class ratio (the seed paper on class-imbalance
    sensitivity): every contingency-space metric's sensitivity s(r) from 1:1 to 1:10^4 and
    beyond the model's ratio, ``metric``'s surface at the period's ratio, and each mature
    window's operating point (TNR, TPR) on it. A read: nothing is stored."""
    return trust_service.metric_trust(
        session, name, metric=metric, segment=segment, period=(start, end)
    )


@router.get("/metric-catalogue")
def get_metric_catalogue(
    name: str,
    session: SessionDep,
    _: ReadAccess,
    *,
    segment: Segment = "all",
    start: From = None,
    end: To = None,
    pi: Annotated[
        float | None,
        Query(gt=0.0, lt=1.0, description="Class ratio's fraud rate (default: the period's)."),
        AfterValidator(check_prior),
    ] = None,
) -> CatalogueOut:
    """Every metric: range, direction, prior invariance, its imbalance sensitivity (seed paper)
    at the model's class ratio, and how far the fraud rate's history range moves it."""
    return catalogue_service.catalogue(session, name, segment=segment, start=start, end=end, pi=pi)


@router.get("/threshold-advice")
def get_threshold_advice(
    name: str, session: SessionDep, _: ReadAccess, *, segment: Segment = "all"
) -> ThresholdAdviceOut:
    """Which threshold to set now: at the fraud rate now (the newest early estimate or nowcast
    of a window waiting for labels, else the newest mature window's), the lowest threshold whose
    alerts stay within alert_capacity in 97.5% of windows, and the lowest that restores the
    reference's precision at the model's threshold, each with the precision, recall and alerts
    to expect and their intervals. Read from the frozen reference's curve sketch, not raw rows;
    ``reason`` says why there is no advice (no frozen reference yet). A read: nothing changes."""
    return advice_service.threshold_advice(session, name, segment)
