"""One claimed window, from raw rows to stored metrics (the worker's job).

After the claim (the loop's own short transaction), two steps in two transactions:

1. read the window's rows; then, outside any transaction, build one sketch per segment (the only
   O(n log n) work) and evaluate them at the model's current pi0 version;
2. store: lock the model (so two workers never cut competing pi0 versions), confirm the lease,
   refresh pi0 from the label counts; if pi0 moved past the tolerance, recompute the rest of the
   series from stored sketches (no raw rows); judge the window against its baseline; write it and
   mark the claimed version computed, all in one commit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import SEGMENT_ALL, Pi0Version
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.db.repositories.window_queue import Claim, WindowQueue
from app.db.tables import MonitoredModel
from app.db.types import utcnow
from app.metrics import CurveSketch, build_sketch, evaluate_sketches
from app.metrics.bootstrap import Intervals
from app.worker.evaluation import (
    Evaluated,
    SegmentInput,
    evaluate_segment,
    judge_segment,
    rows_for,
)
from app.worker.gating import baseline_windows
from app.worker.model_settings import gate_settings, model_policy
from app.worker.pi0 import WindowCounts, estimate_pi0, needs_new_version
from app.worker.rows import SegmentRows, read_window, whole_window
from app.worker.series import FreshWindow, recompute_series


@dataclass(frozen=True)
class ComputeOptions:
    """Knobs of the computation (from Settings)."""

    replicates: int = 1000


class LeaseLostError(RuntimeError):
    """The lease expired and another worker took the window: this computation is discarded."""


@dataclass(frozen=True)
class ComputeOutcome:
    """What one job did, for the worker's counters and log."""

    segments: int
    rows_read: int
    pi0_version: int | None
    sketch_recomputations: int


def _inputs(
    segments: Sequence[SegmentRows], start: datetime, threshold: float
) -> list[SegmentInput]:
    # The whole window is segment "all"; named segments are evaluated on their own as well.
    parts = [whole_window(list(segments), SEGMENT_ALL)]
    parts += [s for s in segments if s.segment != SEGMENT_ALL]
    out = []
    for part in parts:
        labelled = int(part.labels.size)
        sketch = build_sketch(part.scores, part.labels, threshold=threshold) if labelled else None
        out.append(
            SegmentInput(
                segment=part.segment,
                window_start=start,
                rows_total=part.rows_total,
                labelled=labelled,
                positives=int(part.labels.sum()),
                sketch=sketch,
            )
        )
    return out


def compute_claim(
    session_factory: sessionmaker[Session], claim: Claim, owner: str, options: ComputeOptions
) -> ComputeOutcome:
    """Compute and store one claimed window; raises LeaseLostError if the lease was lost."""
    started = time.perf_counter()
    with session_factory.begin() as session:
        model = session.get(MonitoredModel, claim.model_id)
        if model is None:  # deleted meanwhile; its windows went with it
            raise LeaseLostError(f"model {claim.model_id} no longer exists")
        segments = read_window(session, claim.model_id, claim.window_start)
        current = WindowMetricsRepository(session).current_pi0(claim.model_id)
    rows_read = sum(s.rows_total for s in segments)
    inputs = _inputs(segments, claim.window_start, model.threshold)
    guess = current.value if current is not None else None
    evaluated = [
        evaluate_segment(i, guess, model_name=model.name, replicates=options.replicates)
        for i in inputs
    ]

    with session_factory.begin() as session:
        model = _lock_model(session, claim.model_id)
        if not WindowQueue(session).hold(claim, owner):
            raise LeaseLostError(f"lease on {claim} lost")
        repo = WindowMetricsRepository(session)
        version, cut = refresh_pi0(repo, model, inputs[0].counts)
        pi0 = version.value if version is not None else None
        pi0_version = version.version if version is not None else None
        recomputed = 0
        if cut and version is not None:
            fresh = FreshWindow(inputs, claim.dirty_version, time.perf_counter() - started)
            recomputed = recompute_series(
                repo, model, version, fresh, replicates=options.replicates
            )
        else:
            if pi0 != guess:
                evaluated = [
                    evaluate_segment(
                        e.source,
                        pi0,
                        model_name=model.name,
                        replicates=options.replicates,
                        stored=e.intervals,
                    )
                    for e in evaluated
                ]
            store_window(
                repo,
                model,
                evaluated,
                pi0_version=pi0_version,
                source_version=claim.dirty_version,
                duration_seconds=time.perf_counter() - started,
            )
        if not WindowQueue(session).complete(claim, owner):
            raise LeaseLostError(f"lease on {claim} lost before completion")
    return ComputeOutcome(
        segments=len(inputs),
        rows_read=rows_read,
        pi0_version=pi0_version,
        sketch_recomputations=recomputed,
    )


def _lock_model(session: Session, model_id: int) -> MonitoredModel:
    # FOR NO KEY UPDATE serialises workers storing windows of one model (one pi0 version at a
    # time) but, unlike FOR UPDATE, not the foreign-key checks of ingest inserting predictions.
    model = session.scalar(
        select(MonitoredModel).where(MonitoredModel.id == model_id).with_for_update(key_share=True)
    )
    if model is None:
        raise LeaseLostError(f"model {model_id} no longer exists")
    return model


def refresh_pi0(
    repo: WindowMetricsRepository, model: MonitoredModel, window: WindowCounts
) -> tuple[Pi0Version | None, bool]:
    """The model's pi0 version after counting ``window`` in; True if a new version was cut.

    A new version is cut on the first estimate, on a policy change, and when the estimate moves
    by more than ``pi0_tolerance`` relative to the current one. A new version means the stored
    series must be recomputed at it (on the first one, windows stored before any pi0 existed).
    """
    policy = model_policy(model)
    history = [
        w for w in repo.history(model.id, SEGMENT_ALL) if w.window_start != window.window_start
    ]
    estimate = estimate_pi0(policy, [*history, window])
    current = repo.current_pi0(model.id)
    if estimate.value is None:
        return (current if current is not None and current.policy == policy.name else None), False
    changed_policy = current is not None and (
        current.policy != policy.name
        or (policy.name == "fixed" and current.value != estimate.value)
    )
    if not changed_policy and not needs_new_version(
        current.value if current is not None else None, estimate.value, model.pi0_tolerance
    ):
        return current, False
    version = repo.add_pi0_version(
        Pi0Version(
            model_id=model.id,
            version=(current.version + 1) if current is not None else 1,
            value=estimate.value,
            policy=estimate.policy,
            windows_used=estimate.windows_used,
            rows_used=estimate.rows_used,
            positives_used=estimate.positives_used,
            computed_at=utcnow(),
        )
    )
    return version, True


def stored_baseline(
    repo: WindowMetricsRepository,
    model: MonitoredModel,
    source: SegmentInput,
    pi0: float | None,
) -> list[Evaluated]:
    """The segment's baseline windows, re-evaluated from their sketches at ``pi0``.

    The point values come from the sketch (O(entries)); the intervals are the stored ones, which
    are at the current pi0 version because a pi0 move recomputes the whole series first.
    """
    history = repo.history(model.id, source.segment)
    chosen = baseline_windows(
        source.window_start, history, gate_settings(model), model_policy(model)
    )
    chosen = [w for w in chosen if w.window_start != source.window_start]
    if pi0 is None or not chosen:
        return []
    rows = [
        row
        for row in repo.windows(model.id, source.segment, [w.window_start for w in chosen])
        if row.sketch is not None and row.intervals is not None
    ]
    sketches = [CurveSketch.from_bytes(row.sketch) for row in rows if row.sketch is not None]
    results = evaluate_sketches(sketches, pi0=pi0)  # one vectorised pass for the baseline
    return [
        Evaluated(
            SegmentInput(
                source.segment, row.window_start, row.rows_total, row.labelled, row.positives, sk
            ),
            pi0,
            result,
            Intervals.from_dict(row.intervals) if row.intervals is not None else None,
        )
        for row, sk, result in zip(rows, sketches, results, strict=True)
    ]


def store_window(
    repo: WindowMetricsRepository,
    model: MonitoredModel,
    evaluated: Sequence[Evaluated],
    *,
    pi0_version: int | None,
    source_version: int,
    duration_seconds: float,
) -> None:
    """Judge each segment against its stored baseline and replace the window's rows."""
    rows, values = [], []
    now = utcnow()
    settings = gate_settings(model)
    for current in evaluated:
        baseline = stored_baseline(repo, model, current.source, current.pi0)
        judgement = judge_segment(current, baseline, settings)
        row, metric_rows = rows_for(
            model.id,
            current,
            judgement,
            pi0_version=pi0_version,
            threshold=model.threshold,
            source_version=source_version,
            computed_at=now,
            duration_seconds=duration_seconds,
        )
        rows.append(row)
        values.extend(metric_rows)
    start = evaluated[0].source.window_start
    repo.replace_window(model.id, start, rows, values)
