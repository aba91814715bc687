"""A model's segments: listing them, and refusing a read of one it does not have."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.orm import Session

from app.db.repositories.segments import SegmentRepository
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.db.tables import MonitoredModel
from app.errors import NotFoundError
from app.monitoring.vocabulary import SEGMENT_ALL
from app.schemas.segments import SegmentOut, SegmentsOut
from app.services.models import get_model

_LISTED_IN_MESSAGE = 20


def segment_names(
    session: Session, model: MonitoredModel, computed: Collection[str] = ()
) -> list[str]:
    """The model's segments, 'all' first: 'all' (the whole window) always exists, the others
    once a batch has brought them (model_segments, kept by ingestion) or a window of theirs is
    computed (``computed``: rows stored by other means than ingestion count too)."""
    names = set(SegmentRepository(session).names(model.id)) | set(computed)
    names.discard(SEGMENT_ALL)
    return [SEGMENT_ALL, *sorted(names)]


def check_segment(session: Session, model: MonitoredModel, segment: str) -> None:
    """404 naming ``segment`` and listing the model's segments when it has no such segment
    (a typo would otherwise read as a segment with no data)."""
    if segment == SEGMENT_ALL:
        return
    if SegmentRepository(session).known(model.id, {segment}):
        return
    if WindowMetricsRepository(session).has_segment(model.id, segment):
        return
    known = segment_names(session, model, WindowMetricsRepository(session).segment_names(model.id))
    shown = ", ".join(known[:_LISTED_IN_MESSAGE]) + (
        ", ..." if len(known) > _LISTED_IN_MESSAGE else ""
    )
    raise NotFoundError(
        f"model {model.name!r} has no segment {segment!r}; its segments: {shown}",
        details=[{"field": "segment", "message": f"unknown segment {segment!r}"}],
        extra={"model": model.name, "segment": segment, "known_segments": known},
    )


def list_segments(session: Session, name: str) -> SegmentsOut:
    """Every segment of the model with its computed windows, rows and newest window."""
    model = get_model(session, name)
    summaries = WindowMetricsRepository(session).segment_summaries(model.id)
    segments = []
    for segment in segment_names(session, model, summaries):
        summary = summaries.get(segment)
        segments.append(
            SegmentOut(
                segment=segment,
                windows=summary.windows if summary else 0,
                rows=summary.rows if summary else 0,
                newest_window=summary.newest_window if summary else None,
            )
        )
    return SegmentsOut(model=model.name, segments=segments)
