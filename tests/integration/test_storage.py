"""Storage behaviour that both backends must share: aware UTC datetimes, SQLite's pragmas,
and the engine factory's URL handling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import StatementError
from sqlalchemy.orm import Session

from app.db.engine import create_db_engine
from app.db.tables import Window
from app.settings import Settings
from tests.support.worker_data import new_model


def test_datetimes_come_back_aware_in_utc(db_session: Session) -> None:
    model = new_model(db_session, "m", threshold=0.5, min_label_coverage=0.5)
    paris_midnight = datetime(2026, 11, 2, 0, 0, 0, 123456, tzinfo=ZoneInfo("Europe/Paris"))
    db_session.add(Window(model_id=model.id, window_start=paris_midnight))
    db_session.flush()
    db_session.expunge_all()
    stored = db_session.scalars(select(Window.window_start)).one()
    assert stored.tzinfo == UTC
    assert stored == paris_midnight
    assert stored == datetime(2026, 11, 1, 23, 0, 0, 123456, tzinfo=UTC)
    # Range filters compare instants, whatever zone the bound is given in.
    later = paris_midnight.astimezone(timezone(timedelta(hours=-5)))
    assert db_session.scalars(select(Window).where(Window.window_start >= later)).all()


def test_naive_datetimes_are_refused(db_session: Session) -> None:
    model = new_model(db_session, "m", threshold=0.5, min_label_coverage=0.5)
    db_session.add(Window(model_id=model.id, window_start=datetime(2026, 11, 1)))
    with pytest.raises(StatementError, match="naive datetime"):
        db_session.flush()


def test_sqlite_connections_are_configured(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new/dir/calmon.sqlite3"  # missing directories are created
    engine = create_db_engine(Settings(database_url=url, sqlite_busy_timeout_ms=1234))
    try:
        with engine.connect() as connection:
            pragma = {
                name: connection.execute(text(f"PRAGMA {name}")).scalar()
                for name in ("journal_mode", "foreign_keys", "busy_timeout")
            }
    finally:
        engine.dispose()
    assert pragma == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 1234}


def test_plain_postgresql_urls_use_psycopg_3() -> None:
    engine = create_db_engine(Settings(database_url="postgresql://u@127.0.0.1:1/db"))
    assert engine.url.drivername == "postgresql+psycopg"
    with pytest.raises(ValueError, match="psycopg 3"):
        create_db_engine(Settings(database_url="postgresql+psycopg2://u@127.0.0.1:1/db"))
