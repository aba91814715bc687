"""What is stored of a label's time and source, and read back, on both backends (issue 23):
migration 0013, the windows' newest_event (the model's clock) and the worker's read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from alembic import command
from sqlalchemy import Engine, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.db.driver import psycopg_connection
from app.db.engine import create_db_engine
from app.db.migrate import alembic_config, upgrade
from app.db.partitions import ensure_partitions, week_starts
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.repositories.window_rows import (
    _PG_QUERY,
    UNKNOWN_LABEL_SOURCE,
    UNKNOWN_LABEL_TIME,
    SegmentRows,
    WindowRowsRepository,
    binary_array_cursor,
)
from app.db.tables import Window
from app.ingest.timestamps import datetime_to_micros
from app.metrics.sketch_build import NO_ENTITY
from app.windows.rows import whole_window
from tests.support.databases import settings_for
from tests.support.worker_data import add_model, insert_rows, new_model

DAY = datetime(2026, 11, 2, tzinfo=UTC)


def test_the_worker_reads_label_times_and_sources_aligned_with_the_labels(
    session_factory: sessionmaker[Session],
) -> None:
    """Each labelled row's score, label, time and source at the same index, per segment and
    for the whole window; a label stored before times were has the sentinel and code 0."""
    exact = datetime(2099, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)  # no float rounds this
    rows: list[tuple[Any, ...]] = [  # score (identifies the row), label, time, source, segment
        (0.11, 1, DAY + timedelta(days=30, microseconds=7), 2, "FR"),
        (0.12, None, None, None, "FR"),
        (0.13, 0, None, None, "FR"),  # stored before migration 0013
        (0.14, 0, exact, 3, "DE"),
        (0.15, 1, DAY + timedelta(hours=1), 1, "DE"),
        (0.16, None, None, None, "DE"),
    ]
    segments = _stored_and_read(session_factory, rows, labelled_at=2, sources=3)
    expected = {
        (score, label, UNKNOWN_LABEL_TIME if at is None else datetime_to_micros(at), code or 0)
        for score, label, at, code, _ in rows
        if label is not None
    }
    by_name = {part.segment: part for part in segments}
    assert set(by_name) == {"DE", "FR"}
    for part in [*segments, whole_window(segments, "all")]:
        assert part.labelled_at.dtype == np.int64
        assert part.sources.dtype == np.int8
        assert len(part.scores) == len(part.labels) == len(part.labelled_at) == len(part.sources)
        read = set(
            zip(
                part.scores.tolist(),
                part.labels.tolist(),
                part.labelled_at.tolist(),
                part.sources.tolist(),
                strict=True,
            )
        )
        assert read <= expected
    assert sum(len(part.scores) for part in segments) == len(expected)
    assert UNKNOWN_LABEL_SOURCE in by_name["FR"].sources.tolist()


def test_newest_event_only_moves_forward_under_concurrent_style_updates(
    db_session: Session,
) -> None:
    model_id = new_model(db_session).id
    queue = WindowQueueRepository(db_session)
    first, second = DAY, DAY + timedelta(days=1)
    now = DAY + timedelta(days=40)
    assert queue.model_clock(model_id) is None
    queue.mark_dirty(model_id, [first, second], now, {first: DAY + timedelta(hours=5)})
    assert queue.model_clock(model_id) == DAY + timedelta(hours=5)
    queue.mark_dirty(model_id, [first], now, {first: DAY + timedelta(hours=1)})  # older
    queue.mark_dirty(model_id, [first], now)  # no event (a row moved out of it)
    assert queue.model_clock(model_id) == DAY + timedelta(hours=5)
    queue.mark_dirty(model_id, [second], now, {second: second + timedelta(hours=2)})
    assert queue.model_clock(model_id) == second + timedelta(hours=2)
    other = new_model(db_session, "other").id
    assert queue.model_clock(other) is None


def _insert_0012(engine: Engine, backend: str) -> int:
    """A model with a labelled and an unlabelled row and two windows (one of them with no rows
    left), in the schema of revision 0012; the model's id."""
    with engine.begin() as connection:
        model_id = connection.execute(
            text(
                "INSERT INTO models (name, threshold, granularity, timezone, pi0_policy, "
                "min_label_coverage) VALUES ('m', 0.5, 'day', 'UTC', 'historical', 0.8) "
                "RETURNING id"
            )
        ).scalar_one()
        if backend == "postgresql":
            ensure_partitions(
                connection, model_id, week_starts(np.array([datetime_to_micros(DAY)]))
            )
        for window in (DAY, DAY + timedelta(days=1)):  # the second one's rows are gone
            connection.execute(
                text(
                    "INSERT INTO windows (model_id, window_start, dirty_version, "
                    "computed_version, attempts, updated_at) VALUES (:m, :day, 1, 1, 0, :day)"
                ),
                {"m": model_id, "day": window},
            )
        for prediction_id, label, hour in (("labelled", 1, 3), ("open", None, 5)):
            values = {"m": model_id, "id": prediction_id, "day": DAY, "label": label}
            connection.execute(
                text(
                    "INSERT INTO predictions (model_id, prediction_id, window_start, ts, score, "
                    "label, segment) VALUES (:m, :id, :day, :ts, 0.5, :label, 'all')"
                ),
                values | {"ts": DAY + timedelta(hours=hour)},
            )
            if backend == "postgresql":
                connection.execute(
                    text(
                        "INSERT INTO prediction_keys (model_id, prediction_id, window_start) "
                        "VALUES (:m, :id, :day)"
                    ),
                    values,
                )
    return int(model_id)


STORED = "SELECT prediction_id, label, labelled_at, label_source FROM predictions ORDER BY 1"


def test_labels_stored_before_0013_keep_no_time_and_the_checks_hold(
    empty_database_url: str, backend: str
) -> None:
    upgrade(empty_database_url, "0012")
    engine = create_db_engine(settings_for(empty_database_url))
    try:
        model_id = _insert_0012(engine, backend)
        upgrade(empty_database_url, "0013")
        with engine.connect() as connection:
            assert connection.execute(text(STORED)).all() == [
                ("labelled", 1, None, None),
                ("open", None, None, None),
            ]
        with Session(engine) as session:  # the windows start from their rows' timestamps
            clock = WindowQueueRepository(session).model_clock(model_id)
            newest = session.execute(
                select(Window.window_start, Window.newest_event).order_by(Window.window_start)
            ).all()
        assert clock == DAY + timedelta(hours=5)
        assert [tuple(row) for row in newest] == [
            (DAY, DAY + timedelta(hours=5)),
            (DAY + timedelta(days=1), None),
        ]
        refused = [
            "UPDATE predictions SET label_source = 7 WHERE prediction_id = 'labelled'",
            "UPDATE predictions SET label_source = 2 WHERE prediction_id = 'open'",
            "UPDATE predictions SET labelled_at = ts WHERE prediction_id = 'open'",
        ]
        for statement in refused:  # on PostgreSQL, in the week table created before 0013
            with pytest.raises(IntegrityError), engine.begin() as connection:
                connection.execute(text(statement))
        with engine.begin() as connection:
            connection.execute(
                text(
                    "UPDATE predictions SET labelled_at = ts, label_source = 2 "
                    "WHERE prediction_id = 'labelled'"
                )
            )
        command.downgrade(alembic_config(empty_database_url), "0012")
        with engine.connect() as connection:
            assert connection.execute(
                text("SELECT prediction_id, label FROM predictions ORDER BY 1")
            ).all() == [("labelled", 1), ("open", None)]
    finally:
        engine.dispose()


def test_the_read_sends_a_segment_one_column_to_a_row(
    session_factory: sessionmaker[Session],
) -> None:
    """libpq holds a received row whole, in a buffer it keeps for the connection's life: the
    read's rows each carry one column of one segment (the buffer grows to the largest column,
    not to a whole segment), and a column no row has (here amounts and entities) is a view of
    one value, not an array as long as the rows."""
    model_id = add_model(session_factory)
    scores = np.linspace(0.05, 0.95, 6)
    insert_rows(
        session_factory,
        model_id,
        DAY,
        scores,
        [1, 0, None, 0, None, 1],
        segments=["FR", "FR", "FR", "DE", "DE", "DE"],
    )
    with session_factory() as session:
        if session.get_bind().dialect.name != "postgresql":
            pytest.skip("the array transfer is PostgreSQL's")
        raw = psycopg_connection(session)
        assert raw is not None
        with binary_array_cursor(raw) as cursor:
            params = {"model": model_id, "start": DAY}
            rows = list(cursor.stream(_PG_QUERY, params, binary=True))
        segments = WindowRowsRepository(session).read(model_id, DAY)
    assert sorted(row[0] for row in rows) == ["DE"] * 9 + ["FR"] * 9
    assert all(sum(value is not None for value in row[3:]) <= 1 for row in rows)
    for part in segments:
        labelled = part.labels.size
        assert part.amounts.shape == part.entities.shape == (labelled,)
        assert part.amounts.strides == part.entities.strides == (0,)
        assert np.isnan(part.amounts).all()
        assert (part.entities == NO_ENTITY).all()


def test_the_read_keeps_amounts_and_entities_only_where_every_row_has_one(
    session_factory: sessionmaker[Session],
) -> None:
    """A part's amounts (entities) come back aligned with its scores when every row has one,
    and as NaN (NO_ENTITY) for all when any row lacks one: the metrics use them only then, and
    the read aggregates only the rows that have one."""
    rows: list[tuple[Any, ...]] = [  # score (identifies the row), label, amount, entity, segment
        (0.11, 1, 10.5, "card-1", "FR"),
        (0.12, 0, 0.0, "card-2", "FR"),
        (0.13, None, 7.25, "card-1", "FR"),
        (0.14, 0, 3.0, None, "DE"),  # an amount on every DE row; an entity on one of two
        (0.15, 1, 99.0, "card-1", "DE"),
        (0.16, None, None, "card-3", "DE"),  # an unlabelled row without an amount
    ]
    read = _stored_and_read(session_factory, rows, amounts=2, entities=3)
    parts = {p.segment: p for p in read}
    fr, de = parts["FR"], parts["DE"]
    amount_of = {row[0]: row[2] for row in rows}
    assert fr.amounts.tolist() == [amount_of[s] for s in fr.scores.tolist()]
    assert fr.unlabelled_amounts.tolist() == [7.25]
    codes = dict(zip(fr.scores.tolist(), fr.entities.tolist(), strict=True))
    assert codes[0.11] != codes[0.12]
    assert NO_ENTITY not in codes.values()
    assert fr.unlabelled_entities.tolist() == [codes[0.11]]  # card-1 again: the same code
    assert de.amounts.tolist() == [amount_of[s] for s in de.scores.tolist()]
    assert np.isnan(de.unlabelled_amounts).all()
    assert de.unlabelled_amounts.shape == (1,)
    assert (de.entities == NO_ENTITY).all()
    assert de.entities.shape == (2,)
    assert de.unlabelled_entities.tolist() != [NO_ENTITY]  # its one row names card-3


def _stored_and_read(
    session_factory: sessionmaker[Session], rows: list[tuple[Any, ...]], **columns: int
) -> list[SegmentRows]:
    """A new model's window of ``rows`` (score, label, ..., segment last; each keyword's column
    at the position given), as the worker reads it back."""
    model_id = add_model(session_factory)
    fields: dict[str, Any] = {name: [row[i] for row in rows] for name, i in columns.items()}
    insert_rows(
        session_factory,
        model_id,
        DAY,
        np.array([row[0] for row in rows]),
        [row[1] for row in rows],
        segments=[row[-1] for row in rows],
        **fields,
    )
    with session_factory() as session:
        return WindowRowsRepository(session).read(model_id, DAY)
