"""Put predictions and dirty windows straight into the database for worker tests.

The worker's integration tests exercise the claim loop, not the HTTP ingest path (the end-to-end
tests post over HTTP); writing rows directly keeps them fast. Windows are marked dirty exactly as
ingest does: ``dirty_version + 1``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from app.db.partitions import ensure_partitions, week_starts
from app.db.repositories.models import ModelRepository
from app.db.tables import MonitoredModel, Prediction, PredictionKey, Window
from app.windows.compute import ComputeOptions
from app.worker.loop import Worker, WorkerConfig
from tests.support.streams import Day

MODEL_DEFAULTS: dict[str, object] = {
    "threshold": 1.5,
    "granularity": "day",
    "timezone": "UTC",
    "pi0_policy": "historical",
    "min_label_coverage": 0.8,
}


def new_model(session: Session, name: str = "fraud", **settings: object) -> MonitoredModel:
    """A model with test-friendly defaults (``settings`` override them), flushed: it has its id."""
    model = MonitoredModel(name=name, **{**MODEL_DEFAULTS, **settings})
    session.add(model)
    session.flush()
    return model


def add_model(
    session_factory: sessionmaker[Session], name: str = "fraud", **settings: object
) -> int:
    """Register a model with test-friendly defaults in its own transaction; returns its id."""
    with session_factory.begin() as session:
        return new_model(session, name, **settings).id


def mark_dirty(session: Session, model_id: int, window_start: datetime) -> None:
    """Bump the window's dirty version (creating the window), as ingest does."""
    window = session.get(Window, (model_id, window_start))
    if window is None:
        session.add(Window(model_id=model_id, window_start=window_start, dirty_version=1))
        session.flush()
        return
    session.execute(
        update(Window)
        .where(Window.model_id == model_id, Window.window_start == window_start)
        .values(dirty_version=Window.dirty_version + 1)
    )


def insert_rows(
    session_factory: sessionmaker[Session],
    model_id: int,
    window_start: datetime,
    scores: npt.NDArray[np.float64],
    labels: npt.NDArray[np.int8] | list[int | None],
    *,
    prefix: str = "p",
    segments: list[str] | None = None,
    labelled_at: list[datetime | None] | None = None,
    sources: list[int | None] | None = None,
    amounts: list[float | None] | None = None,
    entities: list[str | None] | None = None,
) -> None:
    """Insert one window's rows (label None = not labelled yet) and mark the window dirty;
    ``labelled_at``, ``sources`` (codes), ``amounts`` and ``entities`` per row, NULL if not
    given."""
    rows = [
        {
            "model_id": model_id,
            "prediction_id": f"{prefix}-{i}",
            "window_start": window_start,
            "ts": window_start + timedelta(seconds=i % 86_400),
            "score": float(scores[i]),
            "label": None if labels[i] is None else int(labels[i]),  # type: ignore[arg-type]
            "segment": segments[i] if segments is not None else "all",
            "labelled_at": labelled_at[i] if labelled_at is not None else None,
            "label_source": sources[i] if sources is not None else None,
            "amount": amounts[i] if amounts is not None else None,
            "entity": entities[i] if entities is not None else None,
        }
        for i in range(len(scores))
    ]
    with session_factory.begin() as session:
        if session.get_bind().dialect.name == "postgresql":  # the week's table, the ids' keys
            micros = (window_start - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
            weeks = week_starts(np.array([micros], dtype=np.int64))
            ensure_partitions(session.connection(), model_id, weeks)
            keys = [
                {k: row[k] for k in ("model_id", "prediction_id", "window_start")} for row in rows
            ]
            session.execute(insert(PredictionKey), keys)
        session.execute(insert(Prediction), rows)
        mark_dirty(session, model_id, window_start)


def insert_day(
    session_factory: sessionmaker[Session], model_id: int, day: Day, *, segments: int = 0
) -> None:
    """Insert a stream day; with ``segments`` > 0 rows are spread over that many segments."""
    names = [f"s{i % segments}" for i in range(day.scores.size)] if segments else None
    insert_rows(
        session_factory,
        model_id,
        day.window_start,
        day.scores,
        day.labels,
        prefix=f"d{day.index}",
        segments=names,
    )


def set_labels(
    session_factory: sessionmaker[Session],
    model_id: int,
    window_start: datetime,
    labels: dict[str, int],
) -> None:
    """Label rows late by prediction id and re-dirty their window."""
    with session_factory.begin() as session:
        for prediction_id, label in labels.items():
            session.execute(
                update(Prediction)
                .where(Prediction.model_id == model_id, Prediction.prediction_id == prediction_id)
                .values(label=label)
            )
        mark_dirty(session, model_id, window_start)


def window_versions(
    session_factory: sessionmaker[Session], model_id: int
) -> dict[datetime, tuple[int, int]]:
    """(dirty_version, computed_version) per window start."""
    with session_factory() as session:
        rows = session.execute(
            select(Window.window_start, Window.dirty_version, Window.computed_version).where(
                Window.model_id == model_id
            )
        ).all()
    return {r[0]: (int(r[1]), int(r[2])) for r in rows}


def drain(session_factory: sessionmaker[Session], replicates: int = 100) -> int:
    """Let a real worker, in this process, compute every dirty window; how many it computed.

    100 bootstrap replicates keep the tests fast; the intervals' width is not what they check.
    """
    options = ComputeOptions(replicates=replicates)
    return Worker(session_factory, WorkerConfig(options=options)).drain()


def find_model_id(session_factory: sessionmaker[Session], name: str) -> int:
    """The id of the registered model ``name`` (registered through the API, say)."""
    with session_factory() as session:
        model = ModelRepository(session).get_by_name(name)
    assert model is not None, f"no model {name!r}"
    return model.id
