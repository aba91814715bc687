"""Reads take no write lock on SQLite: GET and HEAD requests, and routes that need only the read
scope, begin deferred and read-only, so
they run beside each other and beside a writer (a page's parallel requests used to queue on
BEGIN IMMEDIATE), and a write slipped into a read fails at once instead of racing for the lock.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, delete
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.db.engine import READ_ONLY
from app.db.tables import ApiToken
from app.services.tokens import create_token
from tests.support.databases import Backend, settings_for
from tests.support.worker_data import add_model


def _sqlite_only(backend: Backend) -> None:
    if backend != "sqlite":
        pytest.skip("PostgreSQL reads never waited for a write lock")


def test_a_read_answers_while_a_writer_holds_the_lock(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session]
) -> None:
    _sqlite_only(backend)
    with session_factory.begin() as session:
        token = create_token(session, "reader", ["read"]).token
    headers = {"Authorization": f"Bearer {token}"}
    settings = settings_for(database_url, sqlite_busy_timeout_ms=2_000)
    writer = create_engine(database_url)
    try:
        with TestClient(create_app(settings)) as client, writer.connect() as connection:
            connection.exec_driver_sql("BEGIN IMMEDIATE")  # what every write transaction takes
            response = client.get("/v1/models", headers=headers)
            what_if = client.post("/v1/models/nobody/whatif", json={}, headers=headers)
            connection.rollback()
    finally:
        writer.dispose()
    assert response.status_code == 200, response.text
    # The writer holds the lock until both answers are in, so a request that needed it would
    # have waited out the busy timeout and failed ("database is locked"): they answered.
    assert what_if.status_code == 404, what_if.text  # a read-scope POST: read, found nothing


def test_a_write_inside_a_read_transaction_fails_at_once(
    backend: Backend, session_factory: sessionmaker[Session]
) -> None:
    _sqlite_only(backend)
    reading = session_factory(execution_options={READ_ONLY: True})
    with pytest.raises(OperationalError, match="readonly"), reading as session, session.begin():
        session.execute(delete(ApiToken))
    add_model(session_factory, "allowed")  # the connection's next transaction writes again
