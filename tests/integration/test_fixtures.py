"""The shared fixtures do what tests/conftest.py promises (both backends)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db.tables import MonitoredModel
from app.schemas.models import ModelCreate
from app.services.models import add_model

PROBE = "rollback-probe"


def _count(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(MonitoredModel)) or 0


def test_db_session_commit_is_visible_inside_the_test(db_session: Session) -> None:
    add_model(db_session, ModelCreate(name=PROBE, threshold=0.5))
    db_session.commit()  # only a savepoint: the outer transaction is rolled back afterwards
    assert _count(db_session) == 1


def test_db_session_left_nothing_behind(db_session: Session) -> None:
    """Runs after the test above on the same backend; a leak would show up here."""
    assert _count(db_session) == 0


def test_committed_rows_are_gone_before_the_next_committed_test(
    session_factory: sessionmaker[Session],
) -> None:
    with session_factory() as session:
        assert _count(session) == 0
    with session_factory.begin() as session:
        add_model(session, ModelCreate(name="committed", threshold=0.5))


def test_committed_rows_do_not_leak_into_the_next_test(
    session_factory: sessionmaker[Session],
) -> None:
    with session_factory() as session:
        assert _count(session) == 0
