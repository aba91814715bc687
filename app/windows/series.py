"""Recompute a model's whole series at a new pi0 from the stored sketches.

Raw prediction rows are never read here: every stored window segment is rebuilt from its sketch
(point values in O(entries); intervals moved along the stored prior grid, or, outside it, by
the sketch bootstrap with the same seed), and its effects against its segment's reference are
taken again at the new pi0, so the whole series ends up at one pi0 version. Verdicts are not
re-judged: a verdict once issued is history (app/monitoring/verdicts.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.cycle_collector import collector_paused
from app.db.metrics_tables import Pi0Version
from app.db.repositories.window_metrics import StoredSegment, WindowMetricsRepository
from app.db.types import utcnow
from app.metrics import Budget, CurveSketch, evaluate_sketches
from app.metrics.bootstrap import Intervals
from app.metrics.prior_grid import IntervalGrid
from app.monitoring.verdicts import StoredVerdict, provisional
from app.monitoring.vocabulary import SEGMENT_ALL
from app.windows.evaluation import (
    Draws,
    RowStamp,
    SegmentInput,
    SegmentOutcome,
    evaluate_segment,
    rows_for,
)
from app.windows.inputs import window_budget
from app.windows.judging import ModelReferences
from app.windows.model_pass import ModelPass


@dataclass(frozen=True)
class FreshWindow:
    """The window being computed now: its inputs come from raw rows, not from storage."""

    inputs: Sequence[SegmentInput]
    source_version: int
    duration_seconds: float
    issued: Mapping[str, StoredVerdict] = field(default_factory=dict)
    """Verdicts already issued for this window (kept, like every stored window's)."""


def _sketch(row: StoredSegment) -> CurveSketch | None:
    return CurveSketch.from_bytes(row.sketch) if row.sketch is not None else None


def _stored_input(row: StoredSegment, sketch: CurveSketch | None, budget: Budget) -> SegmentInput:
    # A label horizon evaluates every row: its coverage is of the labels sent, kept as stored.
    coverage = row.label_coverage
    sent = round(coverage * row.rows_total) if coverage is not None else None
    return SegmentInput(
        row.segment,
        row.window_start,
        row.rows_total,
        row.labelled,
        row.positives,
        sketch,
        sent_labels=sent if sent is not None and sent != row.labelled else None,
        budget=budget,
    )


def _stored_intervals(row: StoredSegment | None) -> Intervals | None:
    if row is None or row.intervals is None or row.interval_grid is None:
        return None
    return Intervals.from_dict(row.intervals, grid=IntervalGrid.from_bytes(row.interval_grid))


@dataclass(frozen=True)
class SeriesPass:
    """What a series recomputation works from: the model as its store transaction sees it, the
    pi0 version to move the series to, the segments' references at it, the replicates drawn."""

    now: ModelPass
    version: Pi0Version
    references: ModelReferences
    replicates: int


def recompute_series(
    repo: WindowMetricsRepository, at: SeriesPass, fresh: FreshWindow | None
) -> int:
    """Re-evaluate every stored window at ``at.version``, and store ``fresh`` (if any) with them.

    Returns how many stored window segments were recomputed from sketches.
    """
    model = at.now.model
    with collector_paused():
        fresh_start = fresh.inputs[0].window_start if fresh is not None else None
        stored = [r for r in repo.series(model.id) if r.window_start != fresh_start]
        sketches = [_sketch(r) for r in stored]  # each read once
        # The alert budget is the whole window's (segment "all"): each part gets its share.
        budgets = {
            r.window_start: window_budget(model, r.rows_total, sketch)
            for r, sketch in zip(stored, sketches, strict=True)
            if r.segment == SEGMENT_ALL
        }
        sources: dict[str, list[tuple[SegmentInput, StoredSegment | None]]] = {}
        for row, sketch in zip(stored, sketches, strict=True):
            budget = budgets.get(row.window_start, Budget(review_cost=model.review_cost))
            source = _stored_input(row, sketch, budget)
            sources.setdefault(row.segment, []).append((source, row))
        for source in fresh.inputs if fresh is not None else ():
            sources.setdefault(source.segment, []).append((source, None))
        out = _Rows()
        for entries in sources.values():
            entries.sort(key=lambda e: e[0].window_start)
            _recompute_segment(entries, at, fresh, out)
        repo.rewrite_series(model.id, out.updated, out.stored_values)
        if fresh_start is not None:
            repo.replace_window(model.id, fresh_start, out.fresh_rows, out.fresh_values)
        return len(out.updated)


@dataclass
class _Rows:
    """What a recomputation writes: updates of stored rows, and the fresh window's rows."""

    updated: list[dict[str, Any]] = field(default_factory=list)
    stored_values: list[dict[str, Any]] = field(default_factory=list)
    fresh_rows: list[dict[str, Any]] = field(default_factory=list)
    fresh_values: list[dict[str, Any]] = field(default_factory=list)


def _recompute_segment(
    entries: Sequence[tuple[SegmentInput, StoredSegment | None]],
    at: SeriesPass,
    fresh: FreshWindow | None,
    out: _Rows,
) -> None:
    """One segment's windows: evaluate all in one batch, then rebuild their rows."""
    now, version, references = at.now, at.version, at.references
    model = now.model
    draws = Draws(model.name, at.replicates)
    kept = {source.window_start: _stored_intervals(row) for source, row in entries}
    sketched = [s for s, _ in entries if s.sketch is not None and s.labelled > 0]
    points = evaluate_sketches(
        [s.sketch for s in sketched if s.sketch],
        pi0=version.value,
        budgets=[s.budget for s in sketched],
    )
    batch = {s.window_start: p for s, p in zip(sketched, points, strict=True)}
    computed_at = utcnow()
    issued = fresh.issued if fresh is not None else {}
    for source, stored_row in entries:
        current = evaluate_segment(
            source,
            version.value,
            draws,
            stored=kept[source.window_start],
            evaluated=batch.get(source.window_start),
        )
        if stored_row is None:
            assert fresh is not None  # only the fresh window has no stored row
            source_version, duration = fresh.source_version, fresh.duration_seconds
            verdict = issued.get(source.segment) or provisional(
                now.maturity.immaturity(source.labels)
            )
        else:
            source_version, duration = stored_row.source_version, stored_row.duration_seconds
            verdict = stored_row.stored_verdict
        mature = verdict.judged_at is not None or now.maturity.is_mature(source.labels)
        result = current.result.to_dict() if current.result is not None else None
        previous = kept[source.window_start]
        stamp = RowStamp(
            model_id=model.id,
            threshold=model.threshold,
            pi0_version=version.version,
            source_version=source_version,
            computed_at=computed_at,
            duration_seconds=duration,
        )
        effects = references.effects(source.segment, result)
        new_row, values = rows_for(
            SegmentOutcome(current, verdict, effects, mature),
            stamp,
            # A stored sketch is unchanged, and so is a grid the intervals were moved along.
            with_sketch=stored_row is None,
            with_grid=previous is None
            or current.intervals is None
            or current.intervals.grid is not previous.grid,
        )
        (out.fresh_rows if stored_row is None else out.updated).append(new_row)
        (out.fresh_values if stored_row is None else out.stored_values).extend(values)
