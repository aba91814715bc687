"""Ingestion use cases: accept a batch of predictions, apply late labels.

Both run inside the request's transaction (the API's session dependency commits or rolls
back); they only execute statements. The batch record, the rows and the dirty windows are
written together, so a batch is either entirely stored and queued for the worker, or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

import numpy as np
import numpy.typing as npt
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.clock import database_now
from app.db.repositories.batches import BatchRepository
from app.db.repositories.ingest import ingest_repository
from app.db.repositories.labels import LabelRepository
from app.db.repositories.models import ModelRepository
from app.db.repositories.segments import SegmentRepository
from app.db.repositories.staged_rows import StagedLabels, StagedRows
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import MonitoredModel
from app.errors import PayloadTooLargeError, PayloadValidationError
from app.ingest.errors import (
    MAX_REPORTED_ERRORS,
    BatchConflictError,
    LabelsValidationError,
    RowError,
    SegmentLimitError,
)
from app.ingest.label_times import LABELLED_AT, before_timestamp, default_sources
from app.ingest.labels import LabelUpdates
from app.ingest.parse import RawBatch
from app.ingest.timestamps import datetime_to_micros, iso_utc, micros_to_datetime
from app.ingest.validate import Limits, validate
from app.ingest.windows import floor_to_windows
from app.monitoring.vocabulary import Granularity
from app.schemas.ingest import BatchAccepted, LabelsApplied
from app.services.models import get_model
from app.settings import Settings


@dataclass(frozen=True)
class IngestOutcome:
    """The response body, and whether this request stored it (201) or replayed it (200)."""

    created: bool
    response: BatchAccepted


class ExpiredWindowError(PayloadValidationError, code="window_expired"):
    """A row falls in a window whose raw rows retention has deleted: nothing was kept."""


class DatabaseRejectedBatchError(PayloadValidationError, code="rejected_by_database"):
    """A row passed validation but the database refused it (a constraint): nothing was kept."""


def request_time(session: Session) -> datetime:
    """The instant a batch or label update is judged at (how far ahead a timestamp may lie)
    and stamped with (its labels' arrival, its windows' update): the database's clock
    (app.db.clock), which every API replica shares; one replica's clock running fast or slow
    would accept a timestamp others refuse, or refuse a true one."""
    return database_now(session)


def limits_from(settings: Settings, now: datetime) -> Limits:
    """The batch bounds that hold at ``now``."""
    return Limits(
        max_rows=settings.max_rows_per_request,
        min_timestamp_micros=datetime_to_micros(settings.min_timestamp),
        max_timestamp_micros=datetime_to_micros(now + settings.max_future),
        max_segments=settings.max_segments_per_model,
    )


def check_row_limit(rows: int, limits: Limits, what: str = "batch has {rows} rows") -> None:
    """413 when a batch (or label update) has more rows than one request may carry."""
    if rows > limits.max_rows:
        raise PayloadTooLargeError(
            f"{what.format(rows=rows)}; at most {limits.max_rows} per request "
            f"(CALMON_MAX_ROWS_PER_REQUEST): split it into several batches",
            extra={"rows": rows, "max_rows": limits.max_rows},
        )


def ingest_batch(
    session: Session, model_name: str, raw: RawBatch, limits: Limits, now: datetime
) -> IngestOutcome:
    """Validate and store one batch for the model called ``model_name``.

    A batch_id already stored with the same content returns the stored response and writes
    nothing; with different content it is a BatchConflictError (409).
    """
    # FOR KEY SHARE until commit: the model cannot be deleted under the batch (its rows carry
    # no foreign key), and a batch that waited for a deletion gets a 404.
    model = get_model(session, model_name, share=True)
    check_row_limit(raw.rows, limits)
    batch = validate(raw, limits)
    windows = floor_to_windows(
        batch.timestamps, cast(Granularity, model.granularity), model.timezone
    )
    _check_retention(model, windows)
    content_hash = batch.content_hash()
    batches = BatchRepository(session)
    if not batches.claim(model.id, batch.batch_id, content_hash, batch.rows):
        stored_hash, stored = batches.find(model.id, batch.batch_id)
        if stored_hash != content_hash:
            raise BatchConflictError(
                f"batch_id {batch.batch_id!r} was already used for different content; "
                "use a new batch_id for new data",
                extra={"batch_id": batch.batch_id},
            )
        return IngestOutcome(created=False, response=BatchAccepted.model_validate(stored))
    _check_segments(session, model.id, batch.segments, limits.max_segments)
    labelled_at, sources = batch.label_columns(datetime_to_micros(now))
    staged = StagedRows(
        model_id=model.id,
        ids=batch.ids,
        timestamps=batch.timestamps,
        windows=windows,
        scores=batch.scores,
        labels=batch.labels,
        segments=batch.segments,
        labelled_at=labelled_at,
        sources=sources,
        amounts=batch.amounts,
        entities=batch.entities,
    )
    repository = ingest_repository(session)
    try:
        result = repository.write_rows(staged)
    except IntegrityError as error:
        raise DatabaseRejectedBatchError(
            f"the database refused a row of the batch, nothing was written: {_reason(error)}"
        ) from error
    touched = [micros_to_datetime(start) for start in result.windows_touched]
    WindowQueueRepository(session).mark_dirty(
        model.id, touched, now, _instants(result.newest_events)
    )
    accepted = BatchAccepted(
        batch_id=batch.batch_id,
        rows_inserted=result.inserted,
        rows_updated=result.updated,
        rows_unchanged=result.unchanged,
        windows_touched=touched,
    )
    # Stored as it goes on the wire, so a replay answers with the same bytes.
    batches.finish(
        model.id, batch.batch_id, result.inserted, result.updated, accepted.model_dump(mode="json")
    )
    return IngestOutcome(created=True, response=accepted)


def update_labels(
    session: Session, model_name: str, updates: LabelUpdates, limits: Limits, now: datetime
) -> LabelsApplied:
    """Set labels of known predictions; unknown ids are listed in the response, not dropped.

    Only rows whose label value actually changes count as updated, take the entry's time and
    source and re-dirty their window, so replaying a chargeback feed is harmless (the first
    arrival of a label value wins). An entry whose time precedes its prediction's timestamp
    refuses the whole update (LabelsValidationError, nothing changed).
    """
    model = get_model(session, model_name)
    check_row_limit(len(updates), limits, "label update has {rows} labels")
    staged = StagedLabels(
        updates.ids, updates.labels, updates.labelled_at, default_sources(updates.sources)
    )
    result = LabelRepository(session).update(model.id, staged, now, report=MAX_REPORTED_ERRORS)
    if result.too_early_count:
        errors = [
            RowError(
                early.entry,
                LABELLED_AT,
                before_timestamp(iso_utc(micros_to_datetime(early.labelled_at)), *early[1:]),
            )
            for early in result.too_early
        ]
        raise LabelsValidationError(errors, result.too_early_count)
    touched = [micros_to_datetime(start) for start in result.changed_windows]
    WindowQueueRepository(session).mark_dirty(
        model.id, touched, now, _instants(result.newest_events)
    )
    return LabelsApplied(
        rows_updated=result.updated,
        rows_unchanged=result.unchanged,
        unknown_ids=result.unknown_ids,
        windows_touched=touched,
    )


def _instants(micros: dict[int, int]) -> dict[datetime, datetime]:
    return {micros_to_datetime(key): micros_to_datetime(value) for key, value in micros.items()}


def _check_retention(model: MonitoredModel, windows: npt.NDArray[np.int64]) -> None:
    """Refuse rows for windows whose raw rows retention deleted: their stored metrics stand and
    are never recomputed from rows, so a row stored there would silently count for nothing."""
    if model.raw_kept_from is None or windows.size == 0:
        return
    kept_from = datetime_to_micros(model.raw_kept_from)
    expired = np.flatnonzero(windows < kept_from)
    if expired.size == 0:
        return
    first = int(expired[0])
    raise ExpiredWindowError(
        f"{expired.size} rows fall in windows older than the model's retention "
        f"(raw rows are kept from {_iso(kept_from)}): nothing was written",
        details=[
            {
                "row": first,
                "field": "timestamp",
                "message": f"its window {_iso(int(windows[first]))} is past retention",
            }
        ],
        extra={"raw_kept_from": _iso(kept_from), "expired_rows": int(expired.size)},
    )


def _check_segments(session: Session, model_id: int, segments: list[str], cap: int) -> None:
    """Refuse a batch that would give the model more than ``cap`` segments; record new ones.

    Only a batch with a segment the model has never had takes the model's row lock, so that two
    batches cannot both take the last places.
    """
    distinct = set(segments)
    if len(distinct) > cap:  # refused on its own, without asking the database
        raise _too_many_segments(segments, distinct, 0, len(distinct), cap)
    repository = SegmentRepository(session)
    new = distinct - repository.known(model_id, distinct)
    if not new:
        return
    ModelRepository(session).lock(model_id)
    new -= repository.known(model_id, new)  # another batch may have added some meanwhile
    have = repository.count(model_id)
    if have + len(new) > cap:
        raise _too_many_segments(segments, new, have, have + len(new), cap)
    repository.add(model_id, new)


def _too_many_segments(
    segments: list[str], new: set[str], have: int, total: int, cap: int
) -> SegmentLimitError:
    first = next(row for row, name in enumerate(segments) if name in new)
    return SegmentLimitError(
        f"the batch would give the model {total} segments; at most {cap} "
        f"(CALMON_MAX_SEGMENTS_PER_MODEL), and it has {have}: nothing was written",
        details=[{"row": first, "field": "segment", "message": f"new segment {segments[first]!r}"}],
        extra={"segments": have, "new_segments": len(new), "max_segments": cap},
    )


def _reason(error: IntegrityError) -> str:
    original = error.orig
    diagnostic = getattr(original, "diag", None)
    primary = getattr(diagnostic, "message_primary", None)
    return str(primary or original).splitlines()[0]


def _iso(micros: int) -> str:
    return micros_to_datetime(micros).isoformat().replace("+00:00", "Z")
