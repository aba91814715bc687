"""The database's clock, not the API server's, decides what lies in the future (issue 25).

Real `calmon serve` processes whose wall clocks are skewed two days with libfaketime, against
PostgreSQL on this machine's true clock (the test's too). A slow API clock used to refuse a true
timestamp an hour ahead; a fast one accepted a day and a half ahead. On SQLite the database
runs inside the API process, on its clock: no skew between them arises, hence PostgreSQL only.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from app.services.tokens import create_token
from tests.support.databases import Backend
from tests.support.faketime import require_skewable, skewed
from tests.support.server import bearer_client, running_server

pytestmark = pytest.mark.postgres


def _batch(client: httpx.Client, batch_id: str, at: datetime) -> httpx.Response:
    columns = {"id": [batch_id], "timestamp": [at.isoformat()], "score": [0.7]}
    return client.post("/v1/models/fraud/batches", json={"batch_id": batch_id, "columns": columns})


def _token_and_env(
    offset: str, session_factory: sessionmaker[Session]
) -> tuple[str, dict[str, str]]:
    """A token, and the environment of a server ``offset`` off true time (no worker: the
    test is about what the API accepts)."""
    with session_factory.begin() as session:
        token = create_token(session, "clock", ["admin", "ingest"]).token
    return token, {**skewed(offset), "CALMON_WORKER_EMBEDDED": "false"}


def test_a_slow_api_clock_accepts_a_timestamp_and_a_label_time_an_hour_ahead(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    require_skewable(backend)
    token, env = _token_and_env("-2d", session_factory)
    with (
        running_server(database_url, env=env, log_dir=tmp_path) as server,
        bearer_client(server.base_url, token) as client,
    ):
        assert client.post("/v1/models", json={"name": "fraud", "threshold": 0.5}).is_success
        now = datetime.now(UTC)
        ahead = _batch(client, "ahead", now + timedelta(hours=1))
        assert _batch(client, "past", now - timedelta(hours=1)).status_code == 201
        label = {"id": "past", "label": 1, "labelled_at": (now + timedelta(hours=1)).isoformat()}
        labelled = client.post("/v1/models/fraud/labels", json={"labels": [label]})
    assert ahead.status_code == 201, ahead.text
    assert labelled.status_code == 200, labelled.text
    assert labelled.json()["rows_updated"] == 1, labelled.text


def test_a_fast_api_clock_refuses_a_timestamp_beyond_the_databases_now_plus_max_future(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    require_skewable(backend)
    token, env = _token_and_env("+2d", session_factory)
    with (
        running_server(database_url, env=env, log_dir=tmp_path) as server,
        bearer_client(server.base_url, token) as client,
    ):
        assert client.post("/v1/models", json={"name": "fraud", "threshold": 0.5}).is_success
        late = _batch(client, "late", datetime.now(UTC) + timedelta(days=1, hours=12))
    assert late.status_code == 422, late.text
    assert "CALMON_MAX_FUTURE" in late.text
