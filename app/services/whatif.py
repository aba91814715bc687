"""What-if priors: a period's pooled curve at other, uncertain or moving fraud rates."""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.errors import PayloadValidationError
from app.metrics import InvalidInputError, bootstrap
from app.metrics.registry import METRICS
from app.metrics.whatif import (
    along_trajectory,
    at_prior,
    over_range,
    range_intervals,
    trajectory_intervals,
)
from app.schemas.analyses import (
    PeriodOut,
    PriorOut,
    RangeIn,
    RangeOut,
    TrajectoryIn,
    TrajectoryOut,
    ValueOut,
    WhatIfOut,
    WhatIfRequest,
)
from app.services.models import get_model
from app.services.periods import Period, load_period

BOOTSTRAP_SEED = 0
"""The analyses' bootstrap seed: the same request gives the same intervals."""


def period_out(period: Period) -> PeriodOut:
    """The pooled period as the API shows it."""
    mean, std = period.pi_spread
    return PeriodOut(
        segment=period.segment,
        first_window=period.windows[0].window_start,
        last_window=period.windows[-1].window_start,
        windows=len(period.windows),
        labelled=period.sketch.n,
        positives=period.sketch.positives,
        pi=period.pooled_pi,
        pi_mean=mean,
        pi_std=std,
        current_pi=period.current_pi,
        current_window=period.windows[-1].window_start,
        pi0=period.pi0,
        pi0_version=period.pi0_version,
        threshold=period.sketch.threshold,
    )


def _invalid(field: str, exc: InvalidInputError) -> PayloadValidationError:
    return PayloadValidationError(str(exc), details=[{"field": field, "message": str(exc)}])


def prior_out(period: Period, pi: float, *, intervals: bool, replicates: int) -> PriorOut:
    """Every registry metric of the pooled curve at ``pi``, with bootstrap intervals."""
    budget = period.budget
    result = at_prior(period.sketch, pi, budget)
    cis = (
        bootstrap(
            period.sketch, pi0=pi, seed=BOOTSTRAP_SEED, replicates=replicates, budget=budget
        ).calibrated
        if intervals
        else {}
    )
    return PriorOut(
        pi=pi,
        metrics={
            spec.name: ValueOut(
                value=result.calibrated[spec.name],
                ci=cis.get(spec.name),
                reason=result.undefined.get(f"calibrated.{spec.name}"),
            )
            for spec in METRICS
        },
    )


def range_out(period: Period, request: RangeIn, *, intervals: bool, replicates: int) -> RangeOut:
    """Integrated precision and P-R area over the requested or the history's range."""
    if request.pi_lo is not None and request.pi_hi is not None:
        lo, hi, source = request.pi_lo, request.pi_hi, "request"
    else:
        (lo, hi), source = period.history_range(), "history"
    try:
        analysis = over_range(period.sketch, lo, hi, request.weight)
    except InvalidInputError as exc:
        raise _invalid("range", exc) from exc
    ends = [at_prior(period.sketch, pi) if 0.0 < pi < 1.0 else None for pi in (lo, hi)]
    precision_ci, area_ci = (
        range_intervals(
            period.sketch, analysis, request.weight, seed=BOOTSTRAP_SEED, replicates=replicates
        )
        if intervals
        else (None, None)
    )

    def at(index: int, name: str) -> float | None:
        result = ends[index]
        return result.calibrated[name] if result is not None else None

    return RangeOut(
        pi_lo=lo,
        pi_hi=hi,
        source=source,
        weighted=analysis.weighted,
        precision=analysis.precision,
        precision_ci=precision_ci,
        precision_at_ends=(at(0, "precision"), at(1, "precision")),
        average_precision=analysis.average_precision,
        average_precision_ci=area_ci,
        average_precision_at_ends=(at(0, "average_precision"), at(1, "average_precision")),
        min_average_precision=analysis.min_average_precision,
        normalised_average_precision=analysis.normalised_average_precision,
        random_average_precision=analysis.random_average_precision,
        reason=analysis.reason,
    )


def trajectory_out(
    period: Period, request: TrajectoryIn, *, intervals: bool, replicates: int
) -> TrajectoryOut:
    """Temporal precision and AP along the requested trajectory, with bootstrap intervals."""
    try:
        analysis = along_trajectory(period.sketch, request.points, request.interpolation)
    except InvalidInputError as exc:
        raise _invalid("trajectory", exc) from exc
    precision_ci, area_ci = (
        trajectory_intervals(
            period.sketch, analysis, request.points, seed=BOOTSTRAP_SEED, replicates=replicates
        )
        if intervals
        else (None, None)
    )
    return TrajectoryOut(
        t_start=analysis.t_start,
        t_end=analysis.t_end,
        interpolation=analysis.interpolation,
        precision=analysis.precision,
        precision_ci=precision_ci,
        average_precision=analysis.average_precision,
        average_precision_ci=area_ci,
        random_average_precision=analysis.random_average_precision,
        reason=analysis.reason,
    )


def what_if(session: Session, name: str, request: WhatIfRequest) -> WhatIfOut:
    """The period's pooled curve at the requested priors, over a range, along a trajectory."""
    model = get_model(session, name)
    period = load_period(session, model, request.segment, request.start, request.end)
    priors = list(request.priors)
    if not priors:
        priors = [p for p in (period.pi0, period.current_pi) if p is not None and 0.0 < p < 1.0]
    return WhatIfOut(
        model=model.name,
        period=period_out(period),
        priors=[
            prior_out(period, pi, intervals=request.intervals, replicates=request.replicates)
            for pi in dict.fromkeys(priors)
        ],
        range=(
            range_out(
                period, request.range, intervals=request.intervals, replicates=request.replicates
            )
            if request.range is not None
            else None
        ),
        trajectory=(
            trajectory_out(
                period,
                request.trajectory,
                intervals=request.intervals,
                replicates=request.replicates,
            )
            if request.trajectory is not None
            else None
        ),
    )
