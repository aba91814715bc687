"""A claimed window's rows turned into what its evaluation needs, per part (the whole window,
then each segment): the curve sketch, the score counts on the model's bins, the rows flagged,
and the labels by the look they arrived at.

A model with ``label_horizon_days`` (a fraud-only feed) is evaluated on every row, those without
a fraud label as legitimate (app/windows/rows.py::evaluated_rows); a model that matures by label
coverage on its labelled rows. The arrivals always come from the labels as sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import cast

from app.db.repositories.window_rows import SegmentRows
from app.db.tables import MonitoredModel
from app.metrics import Budget, CurveSketch, build_sketch
from app.metrics.reporting import Arrivals
from app.metrics.types import Float64Array
from app.monitoring.early_looks import LabelledRows
from app.monitoring.vocabulary import WINDOW_LENGTH, Granularity
from app.windows.evaluation import Evaluated, SegmentInput
from app.windows.rows import evaluated_rows, numbered_parts, window_parts
from app.windows.scores import counted_parts, flagged


def look_length(model: MonitoredModel) -> timedelta:
    """How far apart a model's looks are: its window length, at least a day (an hourly model's
    labels are looked at daily)."""
    return max(WINDOW_LENGTH[cast(Granularity, model.granularity)], timedelta(days=1))


def window_inputs(
    segments: Sequence[SegmentRows],
    start: datetime,
    model: MonitoredModel,
    edges: Float64Array | None,
) -> list[SegmentInput]:
    """Each part's evaluation input (the only sort of the window's rows happens here)."""
    evaluated = _evaluated(segments, model)
    sent = [int(part.labels.size) for part in window_parts(segments)]
    horizon = model.label_horizon_days is not None
    parts = numbered_parts(evaluated)
    sketches = [
        build_sketch(
            part.scores,
            part.labels,
            threshold=model.threshold,
            amounts=part.amounts,
            entities=part.entities,
        )
        if part.labels.size
        else None
        for part in parts
    ]
    budget = window_budget(model, parts[0].rows_total, sketches[0])
    inputs = []
    for part, sent_labels, sketch in zip(parts, sent, sketches, strict=True):
        labelled = int(part.labels.size)
        inputs.append(
            SegmentInput(
                segment=part.segment,
                window_start=start,
                rows_total=part.rows_total,
                labelled=labelled,
                positives=int(part.labels.sum()),
                sketch=sketch,
                flagged=flagged(part, model.threshold),
                sent_labels=sent_labels if horizon else None,
                budget=budget,
            )
        )
    return recounted(inputs, segments, model, edges)


def window_budget(model: MonitoredModel, rows: int, whole: CurveSketch | None) -> Budget:
    """The model's budget for a window of ``rows`` rows whose whole-window sketch is ``whole``:
    every part (the whole window, each segment) is judged at the same share of its rows, and of
    its entities, as the whole window's budget."""
    entities = whole.entities.n if whole is not None and whole.entities is not None else 0
    return Budget.of(model.alert_capacity, model.review_cost, rows, entities)


def recounted(
    inputs: Sequence[SegmentInput],
    segments: Sequence[SegmentRows],
    model: MonitoredModel,
    edges: Float64Array | None,
) -> list[SegmentInput]:
    """``inputs`` with their score counts and arrivals taken on ``edges`` (again: another
    worker may have cut the model's bins meanwhile)."""
    counts = counted_parts(_evaluated(segments, model), edges)
    parts = window_parts(segments)
    out = []
    for current, part, part_counts in zip(inputs, parts, counts, strict=True):
        arrivals = _arrivals(part, current.window_start, model, edges)
        out.append(dataclasses.replace(current, score_counts=part_counts, arrivals=arrivals))
    return out


def recount(
    evaluated: Sequence[Evaluated],
    segments: Sequence[SegmentRows],
    model: MonitoredModel,
    edges: Float64Array | None,
) -> list[Evaluated]:
    """``evaluated`` with its inputs' counts and arrivals taken again on ``edges``."""
    inputs = recounted([e.source for e in evaluated], segments, model, edges)
    return [dataclasses.replace(e, source=i) for e, i in zip(evaluated, inputs, strict=True)]


def _evaluated(segments: Sequence[SegmentRows], model: MonitoredModel) -> list[SegmentRows]:
    if model.label_horizon_days is None:
        return list(segments)
    return [evaluated_rows(s) for s in segments]


def _arrivals(
    part: SegmentRows, start: datetime, model: MonitoredModel, edges: Float64Array | None
) -> Arrivals | None:
    """The part's labels by look (None before the model's bins are cut)."""
    if edges is None:
        return None
    rows = LabelledRows(
        scores=part.scores,
        labels=part.labels,
        labelled_at=part.labelled_at,
        sources=part.sources,
        edges=edges,
        threshold=model.threshold,
    )
    end = start + WINDOW_LENGTH[cast(Granularity, model.granularity)]
    return rows.arrivals(end, look_length(model))
