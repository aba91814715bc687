"""Segments side by side at one reference prior: a period's mature windows pooled per segment,
then compared by app.metrics.segment_compare."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from app.db.repositories.pi0 import Pi0Repository
from app.db.repositories.window_metrics import PeriodWindow, WindowMetricsRepository
from app.db.tables import MonitoredModel
from app.errors import NotFoundError, PayloadValidationError
from app.metrics import CurveSketch, InvalidInputError, pool_sketches
from app.metrics.segment_compare import (
    SegmentQuery,
    SegmentValue,
    SegmentWindow,
    compare_segments,
)
from app.monitoring.pi0 import WindowLabels
from app.monitoring.vocabulary import SEGMENT_ALL
from app.schemas.segment_compare import SegmentCompareOut, SegmentMetricOut, SegmentSideOut
from app.services.model_settings import maturity_now
from app.services.models import get_model
from app.services.periods import POOL_ITERATIONS
from app.services.segments import check_segment
from app.services.whatif import BOOTSTRAP_SEED

SEGMENT_METRICS = (
    "average_precision",
    "precision",
    "recall",
    "f1",
    "fpr",
    "roc_auc",
    "pr_gain_auc",
    "best_f1",
)
"""Metrics that compare across segments of different sizes (counts such as alerts do not)."""


def _mature(model: MonitoredModel, session: Session, windows: list[PeriodWindow]) -> list[datetime]:
    maturity = maturity_now(session, model)
    return [
        w.window_start
        for w in windows
        if w.has_sketch
        and maturity.is_mature(
            WindowLabels(w.window_start, w.labelled, w.positives, w.label_coverage)
        )
    ]


@dataclass(frozen=True)
class _Pool:
    """A segment's sketches over the period: pooled, and each window's by its start."""

    pooled: CurveSketch
    by_window: dict[datetime, CurveSketch]


def _pooled(
    repository: WindowMetricsRepository, model: MonitoredModel, segment: str, starts: list[datetime]
) -> _Pool | None:
    """The segment's sketches at ``starts`` pooled (every window, frauds or not)."""
    stored = repository.sketches_at(model.id, segment, starts)
    if not stored:
        return None
    by_window = {start: CurveSketch.from_bytes(b) for start, b in stored.items()}
    sketches = list(by_window.values())
    thresholds = {s.threshold for s in sketches}
    threshold = None if len(thresholds) == 1 else model.threshold
    pooled = pool_sketches(sketches, threshold=threshold, max_iterations=POOL_ITERATIONS)
    return _Pool(pooled, by_window)


def _windows(whole: _Pool, pools: dict[str, _Pool]) -> list[SegmentWindow]:
    """Each window's sketches: what the comparison reads the windows' spread from (frauds come
    in bursts within a window, which the row bootstrap cannot see)."""
    return [
        SegmentWindow(
            whole=sketch,
            segments={s: p.by_window[start] for s, p in pools.items() if start in p.by_window},
        )
        for start, sketch in whole.by_window.items()
    ]


def _side(segment: str, pool: _Pool, values: dict[str, SegmentValue]) -> SegmentSideOut:
    sketch, windows = pool.pooled, len(pool.by_window)
    metrics = {
        metric: SegmentMetricOut(
            value=v.value,
            ci=v.ci,
            difference=v.difference,
            difference_ci=v.difference_ci,
            decided=v.decided,
            reason=v.reason,
        )
        for metric, v in values.items()
    }
    return SegmentSideOut(
        segment=segment,
        windows=windows,
        labelled=sketch.n,
        positives=sketch.positives,
        pi=sketch.positives / sketch.n if sketch.n else None,
        metrics=metrics,
    )


def segment_comparison(
    session: Session,
    name: str,
    *,
    baseline: str,
    period: tuple[datetime | None, datetime | None],
    replicates: int,
) -> SegmentCompareOut:
    """The model's segments over the period's mature windows, calibrated to pi0 (the pooled
    fraud rate while there is none), each against ``baseline``."""
    model = get_model(session, name)
    check_segment(session, model, baseline)
    repository = WindowMetricsRepository(session)
    starts = _mature(model, session, repository.period_windows(model.id, SEGMENT_ALL, *period))
    whole = _pooled(repository, model, SEGMENT_ALL, starts)
    if whole is None:
        raise NotFoundError(
            f"model {model.name!r} has no mature window in the period", extra={"model": name}
        )
    named = [s for s in repository.segment_names(model.id) if s != SEGMENT_ALL]
    pools = {s: p for s in sorted(named) if (p := _pooled(repository, model, s, starts))}
    if not pools:
        raise PayloadValidationError(
            f"model {model.name!r} has no named segment with a mature window in the period: "
            "send rows with a 'segment' to compare them",
            details=[{"field": "segment", "message": "no named segment to compare"}],
        )
    current = Pi0Repository(session).current(model.id)
    prior = current.value if current is not None else whole.pooled.positives / whole.pooled.n
    query = SegmentQuery(
        pi0=prior,
        metrics=SEGMENT_METRICS,
        baseline=None if baseline == SEGMENT_ALL else baseline,
        whole=SEGMENT_ALL,
        seed=BOOTSTRAP_SEED,
        replicates=replicates,
    )
    try:
        values = compare_segments(
            whole.pooled, {s: p.pooled for s, p in pools.items()}, query, _windows(whole, pools)
        )
    except InvalidInputError as exc:
        raise PayloadValidationError(
            str(exc), details=[{"field": "baseline", "message": str(exc)}]
        ) from exc
    return SegmentCompareOut(
        model=model.name,
        prior=prior,
        prior_source="pi0" if current is not None else "pooled",
        baseline=baseline,
        first_window=starts[0],
        last_window=starts[-1],
        windows=len(starts),
        replicates=replicates,
        whole=_side(SEGMENT_ALL, whole, values[SEGMENT_ALL]),
        segments=[_side(s, p, values[s]) for s, p in pools.items()],
    )
