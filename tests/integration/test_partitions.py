"""PostgreSQL's partitioned predictions (migration 0011, app/db/partitions.py): the worker's read
of one (model, window) touches one week's table, weeks are created as batches need them, and
the migration keeps the rows stored before it, both ways."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from app.db.engine import create_db_engine
from app.db.migrate import alembic_config, upgrade
from app.db.partitions import ensure_partitions, week_of, week_table
from app.db.repositories.window_rows import _PG_QUERY  # the worker's own statement
from app.metrics.sketch_build import NO_ENTITY
from app.worker.loop import Worker, WorkerConfig
from tests.support.api import AuthHeaders
from tests.support.databases import settings_for
from tests.support.worker_data import add_model

MONDAY = datetime(2026, 11, 2, tzinfo=UTC)


def _rows(days: list[int], per_day: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"d{day}-{i}",
            "timestamp": (MONDAY + timedelta(days=day, minutes=i))
            .isoformat()
            .replace("+00:00", "Z"),
            "score": (i * 37 % 100) / 100,
            "label": int(i % 5 == 0),
        }
        for day in days
        for i in range(per_day)
    ]


def _relations(plan: Any) -> set[str]:
    """Every table or index a JSON plan reads."""
    found: set[str] = set()
    if isinstance(plan, dict):
        for key in ("Relation Name", "Index Name"):
            if key in plan:
                found.add(plan[key])
        for value in plan.values():
            found |= _relations(value)
    elif isinstance(plan, list):
        for value in plan:
            found |= _relations(value)
    return found


def test_the_worker_reads_one_window_from_one_week_table(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    backend: str,
) -> None:
    if backend != "postgresql":
        pytest.skip("SQLite keeps one table")
    spec = {"name": "weeks", "threshold": 0.5, "granularity": "day", "timezone": "UTC"}
    assert client.post("/v1/models", json=spec, headers=auth_headers("admin")).status_code == 201
    body = {"batch_id": "b", "rows": _rows([0, 3, 8, 15, 22], 20)}  # four weeks
    answer = client.post("/v1/models/weeks/batches", json=body, headers=auth_headers("ingest"))
    assert answer.status_code == 201, answer.text
    with session_factory() as session:
        model_id = session.execute(text("SELECT id FROM models")).scalar_one()
        # Created as the batch needed them (a table of another test's model 1 may be there too:
        # emptying the tables between tests keeps them, and ids start again at 1).
        weeks = set(
            session.execute(
                text(
                    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                    "WHERE i.inhparent = to_regclass(:parent)"
                ),
                {"parent": f"predictions_m{model_id}"},
            ).scalars()
        )
        wanted = {week_table(model_id, MONDAY + timedelta(weeks=n)) for n in range(4)}
        assert wanted <= weeks
        raw = session.connection().connection.driver_connection
        assert isinstance(raw, psycopg.Connection)
        with raw.cursor() as cursor:
            window = MONDAY + timedelta(days=8)
            params = {"model": model_id, "start": window, "none": NO_ENTITY}
            cursor.execute("EXPLAIN (FORMAT JSON) " + _PG_QUERY, params)
            row = cursor.fetchone()
    assert row is not None
    week = f"predictions_m{model_id}_20261109"
    read = _relations(row[0])
    assert all(name.startswith(week) for name in read), read
    assert week in read or f"{week}_pkey" in read  # its table or its index


def test_the_migration_keeps_stored_rows_both_ways(empty_database_url: str) -> None:
    if not empty_database_url.startswith("postgresql"):
        pytest.skip("on SQLite revision 0011 changes nothing")
    upgrade(empty_database_url, "0010")
    engine = create_db_engine(settings_for(empty_database_url))
    columns = "model_id, prediction_id, window_start, ts, score, label, segment"
    stored = f"SELECT {columns} FROM predictions ORDER BY model_id, prediction_id"
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    f"INSERT INTO predictions ({columns}) SELECT 1 + i % 2, 'id-' || i, "
                    ":monday + (i % 20) * interval '1 day', :monday + i * interval '1 hour', "
                    "0.5, CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 END, 'all' "
                    "FROM generate_series(1, 100) AS i"
                ),
                {"monday": MONDAY},
            )
        with engine.connect() as connection:
            before = connection.execute(text(stored)).all()
        upgrade(empty_database_url, "0011")
        with engine.connect() as connection:
            assert connection.execute(text(stored)).all() == before
            keys = connection.execute(text("SELECT count(*) FROM prediction_keys")).scalar_one()
            assert keys == 100
            parts = connection.execute(
                text(
                    "SELECT count(*) FROM pg_inherits WHERE inhparent = 'predictions_m1'::regclass"
                )
            ).scalar_one()
            assert parts == 3  # 20 days from a Monday: three weeks
        command.downgrade(alembic_config(empty_database_url), "0010")
        with engine.connect() as connection:
            assert connection.execute(text(stored)).all() == before
    finally:
        engine.dispose()


def test_a_week_is_created_once_by_concurrent_batches_and_ahead_by_the_worker(
    session_factory: sessionmaker[Session], backend: str
) -> None:
    """Two transactions needing the same missing week: the second waits for the first (the
    per-model advisory lock), then finds the table instead of failing on a duplicate."""
    if backend != "postgresql":
        pytest.skip("SQLite keeps one table")
    model_id = add_model(session_factory, "racy")
    # A week no other test writes to (model ids start again at 1 in every test).
    monday = datetime(2001, 1, 1, tzinfo=UTC)
    week = [int((monday - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))]
    created, second_done = threading.Event(), threading.Event()

    def second() -> None:
        assert created.wait(30)
        with session_factory.begin() as session:
            ensure_partitions(session.connection(), model_id, week)
        second_done.set()

    other = threading.Thread(target=second)
    other.start()
    with session_factory.begin() as session:
        ensure_partitions(session.connection(), model_id, week)
        created.set()
        assert not second_done.wait(0.5)  # waits for this transaction
    other.join(30)
    assert second_done.is_set()

    worker = Worker(session_factory, WorkerConfig())
    worker.prepare_weeks(force=True)
    with session_factory() as session:
        now = session.execute(text("SELECT now()")).scalar_one()
        this_week = week_of(now)
        for start in (this_week, this_week + timedelta(weeks=1)):
            name = week_table(model_id, start)
            found = session.execute(text("SELECT to_regclass(:n)"), {"n": name}).scalar_one()
            assert found is not None, name


def test_retention_drops_whole_expired_weeks(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    backend: str,
) -> None:
    """Weeks wholly before the retention cut are dropped as tables, after their keys; the
    week the cut falls in keeps its table, without the expired rows."""
    if backend != "postgresql":
        pytest.skip("SQLite keeps one table")
    admin, ingest = auth_headers("admin"), auth_headers("ingest")
    spec = {"name": "short", "threshold": 0.5, "granularity": "day", "timezone": "UTC"}
    assert client.post("/v1/models", json=spec, headers=admin).status_code == 201
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    rows = [
        {
            "id": f"d{days}-{i}",
            "timestamp": (today - timedelta(days=days, minutes=-i))
            .isoformat()
            .replace("+00:00", "Z"),
            "score": 0.5,
            "label": i % 2,
        }
        for days in (0, 1, 2, 20, 21)
        for i in range(10)
    ]
    answer = client.post(
        "/v1/models/short/batches", json={"batch_id": "b", "rows": rows}, headers=ingest
    )
    assert answer.status_code == 201, answer.text
    worker = Worker(session_factory, WorkerConfig())
    worker.drain()
    patch = client.patch("/v1/models/short", json={"retention_windows": 5}, headers=admin)
    assert patch.status_code == 200, patch.text
    worker.drain()
    while worker.expire_once():
        pass
    with session_factory() as session:
        model_id = session.execute(text("SELECT id FROM models")).scalar_one()
        weeks = (
            session.execute(
                text(
                    "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                    "WHERE i.inhparent = to_regclass(:parent) ORDER BY 1"
                ),
                {"parent": f"predictions_m{model_id}"},
            )
            .scalars()
            .all()
        )
        keys = session.execute(text("SELECT count(*) FROM prediction_keys")).scalar_one()
        kept = session.execute(text("SELECT count(*) FROM predictions")).scalar_one()
    old_weeks = {week_table(model_id, week_of(today - timedelta(days=d))) for d in (20, 21)}
    assert not old_weeks & set(weeks), weeks  # dropped as tables
    assert week_table(model_id, week_of(today)) in weeks
    assert keys == kept == 30
