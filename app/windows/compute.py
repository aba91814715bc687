"""One claimed window, from raw rows to stored metrics (the worker's job).

After the claim (app/windows/queue.py, a short transaction of its own), two steps in two
transactions:

1. read the window's rows; then, outside any transaction, build one sketch per segment (the only
   O(n log n) work) and evaluate them at the model's current pi0 version;
2. store: lock the model (so two workers never cut competing pi0 versions), confirm the lease,
   refresh pi0 from the label counts; if pi0 moved past the tolerance, recompute the rest of the
   series from stored sketches (no raw rows); write the window (its effects against its
   segment's reference, its verdict carried over if it was issued before); run the drop detector
   (app/windows/judging.py: freeze references, judge mature windows, store alert states) and the
   nowcasts (app/windows/nowcasting.py: label-free estimates of the windows after each
   reference); mark the claimed version computed, all in one commit.

The window's scores are also counted on its model's score bins (app/windows/scores.py; the
first window with enough rows cuts them).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import Pi0Version
from app.db.repositories.early import EarlyRepository
from app.db.repositories.models import ModelRepository
from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.nowcast import NowcastRepository
from app.db.repositories.pi0 import Pi0Repository
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.db.repositories.window_queue import Claim, WindowQueueRepository
from app.db.repositories.window_rows import WindowRowsRepository
from app.db.tables import MonitoredModel
from app.db.types import utcnow
from app.metrics.types import Float64Array
from app.monitoring.pi0 import CurrentPi0, WindowLabels, next_version
from app.monitoring.verdicts import provisional
from app.monitoring.vocabulary import SEGMENT_ALL, Pi0PolicyName
from app.services.model_settings import model_policy
from app.services.retention import rows_dropped
from app.windows.early import run_early
from app.windows.evaluation import (
    Draws,
    Evaluated,
    RowStamp,
    SegmentOutcome,
    evaluate_segment,
    rows_for,
)
from app.windows.inputs import recount, window_inputs
from app.windows.judging import ModelReferences, load_references, run_detector
from app.windows.model_pass import ModelPass
from app.windows.nowcasting import run_nowcasts
from app.windows.scores import propose_edges, settle_bins, stored_edges
from app.windows.series import FreshWindow, SeriesPass, recompute_series


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


def compute_claim(
    session_factory: sessionmaker[Session], claim: Claim, owner: str, options: ComputeOptions
) -> ComputeOutcome:
    """Compute and store one claimed window; raises LeaseLostError if the lease was lost."""
    started = time.perf_counter()
    with session_factory.begin() as session:
        model = ModelRepository(session).get(claim.model_id)
        if model is None:  # deleted meanwhile; its windows went with it
            raise LeaseLostError(f"model {claim.model_id} no longer exists")
        if rows_dropped(model.raw_kept_from, claim.window_start):
            # Retention deleted its rows: recomputing from none would erase its stored values,
            # which stand (a threshold change reaches only the windows whose rows are kept).
            if not WindowQueueRepository(session).complete(claim, owner):
                raise LeaseLostError(f"lease on {claim} lost before completion")
            return ComputeOutcome(
                segments=0, rows_read=0, pi0_version=None, sketch_recomputations=0
            )
        segments = WindowRowsRepository(session).read(claim.model_id, claim.window_start)
        current = Pi0Repository(session).current(claim.model_id)
        edges = stored_edges(NowcastRepository(session), claim.model_id)
    rows_read = sum(s.rows_total for s in segments)
    proposed = propose_edges(segments, model.threshold) if edges is None else None
    used = edges if edges is not None else proposed
    inputs = window_inputs(segments, claim.window_start, model, used)
    guess = current.value if current is not None else None
    draws = Draws(model.name, options.replicates)
    evaluated = [evaluate_segment(i, guess, draws) for i in inputs]

    with session_factory.begin() as session:
        model = _lock_model(session, claim.model_id)
        queue = WindowQueueRepository(session)
        if not queue.hold(claim, owner):
            raise LeaseLostError(f"lease on {claim} lost")
        now = ModelPass.of(model, queue)
        repo = WindowMetricsRepository(session)
        monitoring = MonitoringRepository(session)
        nowcasts = NowcastRepository(session)
        settled = settle_bins(nowcasts, model.id, claim.window_start, proposed, rows_read)
        if not _same_edges(settled, used):  # another worker cut the model's bins meanwhile
            evaluated = recount(evaluated, segments, model, settled)
            inputs = [e.source for e in evaluated]
        version, cut = refresh_pi0(repo, Pi0Repository(session), now, inputs[0].labels)
        pi0 = version.value if version is not None else None
        pi0_version = version.version if version is not None else None
        references = load_references(monitoring, model, pi0)
        recomputed = 0
        if cut and version is not None:
            fresh = FreshWindow(
                inputs,
                claim.dirty_version,
                time.perf_counter() - started,
                issued=repo.verdicts(model.id, claim.window_start),
            )
            at = SeriesPass(now, version, references, options.replicates)
            recomputed = recompute_series(repo, at, fresh)
        else:
            if pi0 != guess:
                draws = Draws(model.name, options.replicates)  # the locked row's name
                evaluated = [
                    evaluate_segment(e.source, pi0, draws, stored=e.intervals) for e in evaluated
                ]
            stamp = RowStamp(
                model_id=model.id,
                threshold=model.threshold,
                pi0_version=pi0_version,
                source_version=claim.dirty_version,
                computed_at=utcnow(),
                duration_seconds=time.perf_counter() - started,
            )
            store_window(repo, now, evaluated, references, stamp)
        # The bins settled above under the model's lock: cut once and kept, so not read again.
        early = run_early(EarlyRepository(session), monitoring, now, references, settled)
        run_detector(monitoring, repo, now, references, early)
        run_nowcasts(nowcasts, monitoring, now, references, settled)
        if not queue.complete(claim, owner):
            raise LeaseLostError(f"lease on {claim} lost before completion")
    return ComputeOutcome(
        segments=len(inputs),
        rows_read=rows_read,
        pi0_version=pi0_version,
        sketch_recomputations=recomputed,
    )


def _same_edges(a: Float64Array | None, b: Float64Array | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


def _lock_model(session: Session, model_id: int) -> MonitoredModel:
    # FOR NO KEY UPDATE serialises workers storing windows of one model (one pi0 version at a
    # time) but, unlike FOR UPDATE, not the foreign-key checks of ingest inserting predictions.
    model = ModelRepository(session).lock(model_id)
    if model is None:
        raise LeaseLostError(f"model {model_id} no longer exists")
    return model


def refresh_pi0(
    repo: WindowMetricsRepository, pi0: Pi0Repository, now: ModelPass, window: WindowLabels
) -> tuple[Pi0Version | None, bool]:
    """The model's pi0 version after counting ``window`` in; True if a new version was cut
    (app.monitoring.pi0.next_version decides). A new version means the stored series must be
    recomputed at it (on the first one, windows stored before any pi0 existed)."""
    model = now.model
    policy = model_policy(model, now.maturity)
    history = [
        w for w in repo.history(model.id, SEGMENT_ALL) if w.window_start != window.window_start
    ]
    current = pi0.current(model.id)
    known = CurrentPi0(current.value, cast(Pi0PolicyName, current.policy)) if current else None
    estimate = next_version(policy, [*history, window], known, model.pi0_tolerance)
    if estimate is None or estimate.value is None:
        same_policy = current is not None and current.policy == policy.name
        return (current if same_policy else None), False
    version = pi0.add(
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


def store_window(
    repo: WindowMetricsRepository,
    now: ModelPass,
    evaluated: Sequence[Evaluated],
    references: ModelReferences,
    stamp: RowStamp,
) -> None:
    """Replace the window's rows: values, effects against each segment's reference, and the
    verdict (kept if it was issued before, provisional otherwise)."""
    model = now.model
    rows, values = [], []
    start = evaluated[0].source.window_start
    issued = repo.verdicts(model.id, start)
    for current in evaluated:
        segment = current.source.segment
        result = current.result.to_dict() if current.result is not None else None
        waiting = now.maturity.immaturity(current.source.labels)
        verdict = issued.get(segment) or provisional(waiting)
        effects = references.effects(segment, result) if current.pi0 is not None else None
        mature = segment in issued or waiting is None
        row, metric_rows = rows_for(SegmentOutcome(current, verdict, effects, mature), stamp)
        rows.append(row)
        values.extend(metric_rows)
    repo.replace_window(model.id, start, rows, values)
