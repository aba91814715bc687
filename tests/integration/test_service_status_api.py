"""GET /v1/status: what waits for the worker over the models a token may read, and how many
workers are alive (the web UI's header shows it on every page)."""

from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from tests.support.analyses import register
from tests.support.api import AuthHeaders, get_json
from tests.support.streams import day_start
from tests.support.worker_data import drain, find_model_id, insert_rows


def test_the_queue_over_the_tokens_models(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    for name in ("fraud-a", "fraud-b", "other"):
        register(client, auth_headers, name)
    rng = np.random.default_rng(1)
    for day, name in enumerate(("fraud-a", "fraud-a", "other")):
        y = (rng.random(500) < 0.05).astype(np.int8)
        model = find_model_id(session_factory, name)
        insert_rows(
            session_factory, model, day_start(day), rng.normal(y, 1.0), y, prefix=f"{name}-{day}"
        )

    waiting = get_json(client, auth_headers("read"), "/v1/status")
    assert (waiting["models"], waiting["dirty_windows"]) == (3, 3)
    assert waiting["oldest_dirty_update"] is not None
    assert waiting["worker_lag_seconds"] >= 0.0
    assert waiting["workers_alive"] == 0  # no worker runs in this test
    scoped = get_json(client, auth_headers("read", models=["fraud-*"]), "/v1/status")
    assert (scoped["models"], scoped["dirty_windows"]) == (2, 2)

    drain(session_factory)
    done = get_json(client, auth_headers("read"), "/v1/status")
    assert (done["dirty_windows"], done["failing_windows"], done["parked_windows"]) == (0, 0, 0)
    assert done["oldest_dirty_update"] is None
    assert done["worker_lag_seconds"] == 0.0
    assert client.get("/v1/status").status_code == 401
