"""A window's rows as the worker evaluates them: the whole window, then each segment.

The rows are read by app/db/repositories/window_rows.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from app.db.repositories.window_rows import SegmentRows
from app.metrics.sketch_build import NO_ENTITY, number_entities
from app.monitoring.vocabulary import SEGMENT_ALL, UNKNOWN_LABEL_TIME


def whole_window(segments: list[SegmentRows], name: str) -> SegmentRows:
    """All segments of a window together, under the name ``name``."""
    if len(segments) == 1:
        return dataclasses.replace(segments[0], segment=name)
    if not segments:
        empty = np.empty(0, dtype=np.float64)
        codes = np.empty(0, dtype=np.int8)
        times = np.empty(0, dtype=np.int64)
        return SegmentRows(
            name,
            0,
            empty,
            codes,
            empty,
            times,
            codes,
            amounts=empty,
            unlabelled_amounts=empty,
            entities=times,
            unlabelled_entities=times,
        )
    return SegmentRows(
        name,
        sum(s.rows_total for s in segments),
        np.concatenate([s.scores for s in segments]),
        np.concatenate([s.labels for s in segments]).astype(np.int8),
        np.concatenate([s.unlabelled for s in segments]),
        np.concatenate([s.labelled_at for s in segments]).astype(np.int64),
        np.concatenate([s.sources for s in segments]).astype(np.int8),
        amounts=np.concatenate([s.amounts for s in segments]),
        unlabelled_amounts=np.concatenate([s.unlabelled_amounts for s in segments]),
        entities=np.concatenate([s.entities for s in segments]),
        unlabelled_entities=np.concatenate([s.unlabelled_entities for s in segments]),
    )


def window_parts(segments: Sequence[SegmentRows]) -> list[SegmentRows]:
    """The parts a window is evaluated as: the whole window (segment "all"), then each named
    segment on its own."""
    parts = [whole_window(list(segments), SEGMENT_ALL)]
    return parts + [s for s in segments if s.segment != SEGMENT_ALL]


def numbered_parts(segments: Sequence[SegmentRows]) -> list[SegmentRows]:
    """:func:`window_parts` with the entities numbered once for the whole window (one sort of
    its codes): each segment's rows then carry indices below the window's entity count, which
    its entity sketch groups in linear time instead of sorting its codes again. Rows without
    an entity keep NO_ENTITY."""
    parts = window_parts(segments)
    whole = parts[0]
    named = whole.entities != NO_ENTITY
    if not named.any():
        return parts
    if named.all():  # every row names one (a card on every row): no copy in, none out
        numbered = number_entities(whole.entities)[0]
    else:
        numbered = np.full(whole.entities.size, NO_ENTITY, dtype=np.int64)
        numbered[named] = number_entities(whole.entities[named])[0]
    stops = np.cumsum([s.entities.size for s in segments])
    by_name = {
        s.segment: numbered[stop - s.entities.size : stop]
        for s, stop in zip(segments, stops.tolist(), strict=True)
    }
    out = [dataclasses.replace(whole, entities=numbered)]
    return out + [dataclasses.replace(p, entities=by_name[p.segment]) for p in parts[1:]]


def evaluated_rows(segment: SegmentRows) -> SegmentRows:
    """The rows a fraud-only model (``label_horizon_days``) is evaluated on: every row, those
    without a fraud label as legitimate. At maturity that is what the horizon says they are;
    before, it is the window so far (its values are withheld until it matures). The labels'
    times and sources stay with the labelled rows (``segment``) for the arrivals."""
    if not segment.unlabelled.size:
        return segment
    unlabelled = segment.unlabelled.size
    return SegmentRows(
        segment.segment,
        segment.rows_total,
        np.concatenate([segment.scores, segment.unlabelled]),
        np.concatenate([segment.labels, np.zeros(unlabelled, dtype=np.int8)]),
        np.empty(0, dtype=np.float64),
        np.concatenate(
            [segment.labelled_at, np.full(unlabelled, UNKNOWN_LABEL_TIME, dtype=np.int64)]
        ),
        np.concatenate([segment.sources, np.zeros(unlabelled, dtype=np.int8)]),
        amounts=np.concatenate([segment.amounts, segment.unlabelled_amounts]),
        unlabelled_amounts=np.empty(0, dtype=np.float64),
        entities=np.concatenate([segment.entities, segment.unlabelled_entities]),
        unlabelled_entities=np.empty(0, dtype=np.int64),
    )
