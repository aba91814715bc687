"""app.db.bulk's updates: a few rows one UPDATE each (pipelined), many through a staging table.

Both ways must write the same thing: the named columns only, JSON as JSON, NULL as SQL NULL
(not JSON null), bytes, times and keys as given. On SQLite both are the ORM's executemany,
which writes a None into a JSON column as JSON null.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import bulk
from app.db.metrics_tables import WindowMetrics
from tests.support.worker_data import new_model

KEY = ("model_id", "window_start", "segment")
START = datetime(2026, 3, 1, tzinfo=UTC)


def _stored_row(model_id: int, day: int) -> dict[str, Any]:
    return {
        "model_id": model_id,
        "window_start": START + timedelta(days=day),
        "segment": "__all__",
        "rows_total": 100,
        "labelled": 100,
        "positives": 3,
        "negatives": 97,
        "threshold": 0.5,
        "verdict": "insufficient_data",
        "verdict_reason": "not judged yet",
        "evidence": {"old": True},
        "source_version": 1,
        "computed_at": START,
        "duration_seconds": 0.1,
    }


def _change(model_id: int, day: int) -> dict[str, Any]:
    """New values for some columns: JSON with nesting and floats, a NULL where JSON was, text
    set to NULL, bytes, a time."""
    return {
        "model_id": model_id,
        "window_start": START + timedelta(days=day),
        "segment": "__all__",
        "verdict": "stable",
        "verdict_reason": None,
        "judged_at": START + timedelta(days=day, hours=30),
        "decomposition": {"prior": [0.1, -0.25], "day": day, "note": None},
        "evidence": None,
        "arrivals": bytes([day % 256, 0, 255]),
    }


def _written(session: Session, model_id: int) -> list[tuple[Any, ...]]:
    columns = [getattr(WindowMetrics, c) for c in (*_change(0, 0), "positives", "source_version")]
    query = select(*columns).where(WindowMetrics.model_id == model_id)
    return [tuple(row) for row in session.execute(query.order_by(WindowMetrics.window_start))]


@pytest.mark.parametrize("rows", [3, 2 * bulk.FEW_ROWS, 2 * bulk.FEW_ROWS + 6])
def test_an_update_writes_the_named_columns_and_nothing_else(
    db_session: Session, rows: int
) -> None:
    model_id = new_model(db_session).id
    bulk.insert_many(db_session, WindowMetrics, [_stored_row(model_id, d) for d in range(rows)])
    # Every other row changes (FEW_ROWS of them at most: row by row; more: the staging table);
    # the others must stay as they were.
    changed = [_change(model_id, d) for d in range(0, rows, 2)]
    bulk.update_many(db_session, WindowMetrics, changed, key=KEY)
    db_session.expire_all()
    written = _written(db_session, model_id)
    assert len(written) == rows
    for day, row in enumerate(written):
        if day % 2 == 0:
            expected = _change(model_id, day)
            assert row[:-2] == tuple(expected.values())
        else:
            untouched = _stored_row(model_id, day)
            assert row[3:7] == ("insufficient_data", "not judged yet", None, None)
            assert row[7] == untouched["evidence"]
        assert row[-2:] == (3, 1)  # columns no row names are left as they are
    if db_session.get_bind().dialect.name != "postgresql":
        return  # SQLite's ORM writes a None into a JSON column as JSON null (read as None)
    # On PostgreSQL a None written to a JSON column is SQL NULL, as the staging COPY writes it,
    # not the JSON value null (both read back as None).
    nulls = select(func.count()).where(
        WindowMetrics.model_id == model_id, WindowMetrics.evidence.is_(None)
    )
    assert db_session.scalar(nulls) == len(changed)
