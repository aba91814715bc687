"""Recompute a model's whole series at a new pi0 from the stored sketches.

Raw prediction rows are never read here: every stored window segment is rebuilt from its sketch
(point values in O(entries); intervals moved along the stored prior grid, or, outside it, by
the sketch bootstrap with the same seed), and windows are judged in time order against
baselines evaluated in this same pass, so the whole series ends up at one pi0 version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.db.metrics_tables import Pi0Version, WindowMetrics
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.db.tables import MonitoredModel
from app.db.types import utcnow
from app.metrics import CurveSketch
from app.metrics.bootstrap import Intervals
from app.metrics.prior_grid import IntervalGrid
from app.worker.evaluation import Evaluated, SegmentInput, evaluate_segment, judge_segment, rows_for
from app.worker.gating import Baselines
from app.worker.model_settings import gate_settings, model_policy


@dataclass(frozen=True)
class FreshWindow:
    """The window being computed now: its inputs come from raw rows, not from storage."""

    inputs: Sequence[SegmentInput]
    source_version: int
    duration_seconds: float


def _stored_input(row: WindowMetrics) -> SegmentInput:
    sketch = CurveSketch.from_bytes(row.sketch) if row.sketch is not None else None
    return SegmentInput(
        row.segment, row.window_start, row.rows_total, row.labelled, row.positives, sketch
    )


def _stored_intervals(row: WindowMetrics | None) -> Intervals | None:
    if row is None or row.intervals is None or row.interval_grid is None:
        return None
    return Intervals.from_dict(row.intervals, grid=IntervalGrid.from_bytes(row.interval_grid))


def recompute_series(
    repo: WindowMetricsRepository,
    model: MonitoredModel,
    version: Pi0Version,
    fresh: FreshWindow | None,
    *,
    replicates: int,
) -> int:
    """Re-evaluate every stored window at ``version``, and store ``fresh`` (if any) with them.

    Returns how many stored window segments were recomputed from sketches.
    """
    fresh_start = fresh.inputs[0].window_start if fresh is not None else None
    stored = [r for r in repo.series(model.id) if r.window_start != fresh_start]
    sources: dict[str, list[tuple[SegmentInput, WindowMetrics | None]]] = {}
    for row in stored:
        sources.setdefault(row.segment, []).append((_stored_input(row), row))
    for source in fresh.inputs if fresh is not None else ():
        sources.setdefault(source.segment, []).append((source, None))
    settings, policy = gate_settings(model), model_policy(model)
    now = utcnow()
    updated: list[dict[str, Any]] = []
    fresh_rows: list[dict[str, Any]] = []
    stored_values: list[dict[str, Any]] = []
    fresh_values: list[dict[str, Any]] = []
    for entries in sources.values():
        entries.sort(key=lambda e: e[0].window_start)
        baselines = Baselines([source.counts for source, _ in entries], settings, policy)
        # Evaluate every window first: a reference-period baseline may lie after the window.
        done: dict[datetime, Evaluated] = {
            source.window_start: evaluate_segment(
                source,
                version.value,
                model_name=model.name,
                replicates=replicates,
                stored=_stored_intervals(stored_row),
            )
            for source, stored_row in entries
        }
        for source, stored_row in entries:
            current = done[source.window_start]
            chosen = baselines.of(source.window_start)
            baseline = [
                done[w.window_start] for w in chosen if w.window_start != source.window_start
            ]
            judgement = judge_segment(current, baseline, settings)
            if stored_row is None:
                assert fresh is not None  # only the fresh window has no stored row
                source_version, duration = fresh.source_version, fresh.duration_seconds
            else:
                source_version, duration = stored_row.source_version, stored_row.duration_seconds
            new_row, values = rows_for(
                model.id,
                current,
                judgement,
                pi0_version=version.version,
                threshold=model.threshold,
                source_version=source_version,
                computed_at=now,
                duration_seconds=duration,
                with_sketch=stored_row is None,  # a stored sketch is unchanged: not rewritten
            )
            (fresh_rows if stored_row is None else updated).append(new_row)
            (fresh_values if stored_row is None else stored_values).extend(values)
    repo.rewrite_series(model.id, updated, stored_values)
    if fresh_start is not None:
        repo.replace_window(model.id, fresh_start, fresh_rows, fresh_values)
    return len(updated)
