"""Label-free estimates of a model's windows (the worker's I/O around app/monitoring/nowcast).

In the store transaction, after the drop detector: for each segment with a frozen reference, the
windows after it whose nowcast is missing or was made against an older reference version get one
(newest first, at most ``NOWCASTS_PER_PASS`` a pass plus one a segment): the fraud rate and the
expected metrics estimated from their score counts against the reference's class-conditional score
counts. A window not judged yet gets the provisional verdict ``score_shift`` when the reference's
mixture does not explain its scores, alone or together with the windows before it (the recent test,
app/monitoring/nowcast.py). A nowcast does not depend on pi0, so a pi0 move keeps them.

A reference's score counts are pooled from its windows' once every one of them has counts
(windows stored before the model's bins were cut are being counted again meanwhile). Its frauds'
dispersion (bursts: app.metrics.misfit.reference_dispersion) is computed from the same windows'
counts in each pass that has windows to estimate: ~20 ms a segment, and nothing to store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import cast

import numpy as np

from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.nowcast import (
    NowcastRepository,
    PendingNowcast,
    ReferenceWindowCounts,
    SegmentSpan,
    WindowToNowcast,
)
from app.db.tables import MonitoredModel
from app.metrics import (
    ClassHistogram,
    InvalidInputError,
    ScoreHistogram,
    nowcast_window,
    pooled_fit,
)
from app.metrics.burst_dispersion import NO_DISPERSION, Dispersion
from app.metrics.misfit import reference_dispersion
from app.metrics.types import Float64Array, Int64Array
from app.monitoring.alerts import FrozenReference
from app.monitoring.nowcast import (
    NOWCASTS_PER_PASS,
    RECENT_WINDOWS,
    RecentFit,
    shift_reason,
    stored_nowcast,
)
from app.monitoring.verdicts import provisional
from app.monitoring.vocabulary import SEGMENT_ALL, WINDOW_LENGTH, Granularity
from app.windows.evaluation import seed_for
from app.windows.judging import ModelReferences
from app.windows.model_pass import ModelPass


def run_nowcasts(
    repo: NowcastRepository,
    monitoring: MonitoringRepository,
    now: ModelPass,
    references: ModelReferences,
    edges: Float64Array | None,
) -> None:
    """Estimate the windows that need it; store the estimates and provisional verdicts;
    ``edges``: the model's score bins (as settled by this pass)."""
    model = now.model
    if edges is None:
        return
    rows = []
    # Read once for every segment here, after the detector (which may have frozen references
    # and marked their windows): nothing below writes the windows' verdicts or counts.
    version = references.spec.version
    read = (
        repo.reference_window_counts_by_segment(model.id, version)
        if references.frozen
        else ReferenceWindowCounts(version, {})
    )
    segments = sorted(references.frozen, key=lambda s: (s != SEGMENT_ALL, s))
    # A pass that cannot finish re-dirties the newest window so that the next pass goes on, and
    # recomputing that window drops its estimates in every segment: the next pass must redo
    # those (one a segment) and still get further, or a model with more segments waiting than
    # the budget redoes its newest windows forever. So the budget is per pass plus one a segment.
    left = NOWCASTS_PER_PASS + len(segments)
    # Every segment's backlog in one read (the newest windows each, their counts read below
    # for the windows the pass takes): it was a round trip per segment, and one more for
    # each segment's recent counts.
    spans = [_span(segment, references.frozen[segment].reference) for segment in segments]
    pending = repo.backlogs(model.id, spans, limit=left + 1)
    taken: list[tuple[str, FrozenReference, ClassHistogram, list[PendingNowcast]]] = []
    for segment in segments:
        frozen = references.frozen[segment].reference
        classes = _reference_classes(repo, model.id, segment, frozen, edges)
        if classes is None:
            continue
        backlog = pending.get(segment, [])[: left + 1]
        if len(backlog) > left:  # more than this pass may do: the next pass goes on
            monitoring.touch_newest_window(model.id)
            backlog = backlog[:left]
        left -= len(backlog)
        if backlog:
            taken.append((segment, frozen, classes, backlog))
    around = [_around(model, segment, frozen, backlog) for segment, frozen, _, backlog in taken]
    stored = repo.counts_of_spans(model.id, around)
    for segment, frozen, classes, chosen in taken:
        recent = _Recent.of(stored.get(segment, []))
        windows = [w.with_counts(recent.raw[w.labels.window_start]) for w in chosen]
        parts = repo.reference_window_counts(model.id, segment, frozen.version, read=read)
        dispersion = _dispersion(parts, edges)
        reference = _Reference(frozen, classes, dispersion)
        rows += [
            _estimated(now, segment, window, reference=reference, recent=recent)
            for window in windows
        ]
    monitoring.record_judgements(model.id, rows)


@dataclass(frozen=True)
class _Recent:
    """A segment's score counts around the windows to estimate, for the recent test."""

    counts: dict[datetime, Int64Array]
    raw: dict[datetime, bytes]
    """The same counts as stored (the windows to estimate are among them)."""

    @classmethod
    def of(cls, stored: Sequence[tuple[datetime, bytes]]) -> _Recent:
        """The counts read for the segment's span (:func:`_around`)."""
        counts = {start: ScoreHistogram.from_bytes(data).rows for start, data in stored}
        return cls(counts, dict(stored))

    def pooled(self, start: datetime, own: Int64Array) -> tuple[int, Int64Array] | None:
        """The window's counts with those of up to RECENT_WINDOWS - 1 windows before it (how
        many windows, and their sum), or None if it has none before it."""
        before = sorted(s for s in self.counts if s < start)[-(RECENT_WINDOWS - 1) :]
        if not before:
            return None
        total = own + np.sum([self.counts[s] for s in before], axis=0)
        return len(before) + 1, total.astype(np.int64)


def _span(segment: str, frozen: FrozenReference) -> SegmentSpan:
    """The windows after the segment's reference not nowcast against it."""
    return SegmentSpan(segment, after=frozen.last_window, version=frozen.version)


def _around(
    model: MonitoredModel, segment: str, frozen: FrozenReference, backlog: Sequence[PendingNowcast]
) -> SegmentSpan:
    """The windows whose counts the recent test of ``backlog`` reads (the backlog among them):
    RECENT_WINDOWS window lengths back, and a day for time-zone shifts: wide enough."""
    starts = [w.labels.window_start for w in backlog]
    reach = WINDOW_LENGTH[cast(Granularity, model.granularity)] * RECENT_WINDOWS
    since = min(starts) - reach - timedelta(days=1)
    return SegmentSpan(segment, after=frozen.last_window, since=since, until=max(starts))


@dataclass(frozen=True)
class _Reference:
    """A segment's reference as the nowcasts read it: the frozen reference, its class counts,
    its frauds' dispersion."""

    frozen: FrozenReference
    classes: ClassHistogram
    dispersion: Dispersion


def _estimated(
    now: ModelPass,
    segment: str,
    window: WindowToNowcast,
    *,
    reference: _Reference,
    recent: _Recent,
) -> dict[str, object]:
    """The columns one window's nowcast sets (the verdict too, if not judged yet)."""
    model, frozen = now.model, reference.frozen
    start = window.labels.window_start
    row: dict[str, object] = {
        "window_start": start,
        "segment": segment,
        "nowcast_reference_version": frozen.version,
    }
    counts = ScoreHistogram.from_bytes(window.score_counts)
    try:
        estimate = nowcast_window(
            counts.rows,
            window.flagged,
            reference.classes,
            frozen.sketch,
            seed=seed_for(model.name, start, segment, "|nowcast"),
            dispersion=reference.dispersion,
        )
    except InvalidInputError as error:  # an empty window: nothing to estimate, said so
        row["nowcast"] = {"reference_version": frozen.version, "unavailable": str(error)}
        return row
    pooled = recent.pooled(start, counts.rows)
    recent_fit = (
        RecentFit(
            pooled[0],
            pooled_fit(
                pooled[1], reference.classes, frozen.sketch, dispersion=reference.dispersion
            ),
        )
        if pooled is not None
        else None
    )
    row["nowcast"] = stored_nowcast(
        estimate, frozen.version, recent_fit, dispersion=reference.dispersion
    )
    if not window.judged:
        counts_reason = now.maturity.immaturity(window.labels)
        row.update(provisional(counts_reason, shift_reason(estimate.fit, recent_fit)).columns())
    return row


def _reference_classes(
    repo: NowcastRepository,
    model_id: int,
    segment: str,
    frozen: FrozenReference,
    edges: Float64Array,
) -> ClassHistogram | None:
    """The reference's labelled score counts (pooled and stored on first use), or None while
    some of its windows have none."""
    # Pooled counts are stored once and never change: those loaded with the reference stand.
    stored = frozen.score_counts or repo.reference_counts(model_id, segment, frozen.version)
    if stored is None:
        parts = repo.reference_window_counts(model_id, segment, frozen.version)
        if len(parts) != frozen.windows or any(p is None for p in parts):
            return None
        pooled = ScoreHistogram.pooled(
            [ScoreHistogram.from_bytes(p) for p in parts if p is not None]
        )
        stored = pooled.to_bytes()
        repo.set_reference_counts(model_id, segment, frozen.version, stored)
    counts = ScoreHistogram.from_bytes(stored)
    if counts.positives.size != edges.size + 1:
        return None
    try:
        return counts.classes(edges)
    except InvalidInputError:  # a reference without labelled frauds on the bins
        return None


def _dispersion(parts: list[bytes | None], edges: Float64Array) -> Dispersion:
    """The reference's frauds' dispersion, from its windows' stored counts (``parts``: every
    one of them has counts, :func:`_reference_classes` pooled them)."""
    return _dispersion_of(tuple(parts), edges.tobytes())


@lru_cache(maxsize=256)
def _dispersion_of(parts: tuple[bytes | None, ...], edges_bytes: bytes) -> Dispersion:
    # A pure function of the reference's stored counts, asked again for every window estimated
    # against the same reference: a fifth of the worker's time on the peers' job (30 windows,
    # 5 segments; cProfile). Keyed by the counts themselves, so a count that changes is a new
    # key, never a stale answer; 256 references of about 14 windows' counts are a few MB.
    edges = np.frombuffer(edges_bytes, dtype=np.float64)
    windows = [ScoreHistogram.from_bytes(p) for p in parts if p is not None]
    if any(w.positives.size != edges.size + 1 for w in windows):
        return NO_DISPERSION
    return reference_dispersion(windows, edges)
