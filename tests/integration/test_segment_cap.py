"""A model's segments are capped (issue 16, finding 7): a client cannot grow /metrics without
bound by inventing segment names. Both backends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.db.tables import Prediction
from tests.support.api import AuthHeaders
from tests.support.databases import settings_for

MODEL = "fraud-v1"


@pytest.fixture
def capped(database_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(database_url, max_segments_per_model=3))) as client:
        yield client


def _batch(batch_id: str, segments: list[str]) -> dict[str, Any]:
    rows = [
        {"id": f"{batch_id}-{i}", "timestamp": 1_793_000_000 + i, "score": 0.5, "segment": s}
        for i, s in enumerate(segments)
    ]
    return {"batch_id": batch_id, "rows": rows}


def test_new_segments_past_the_cap_are_refused(
    capped: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    headers = auth_headers("admin", "ingest")
    model = {"name": MODEL, "threshold": 0.5}
    assert capped.post("/v1/models", json=model, headers=headers).status_code == 201
    url = f"/v1/models/{MODEL}/batches"
    assert (
        capped.post(url, json=_batch("b1", ["FR", "DE", "FR"]), headers=headers).status_code == 201
    )

    refused = capped.post(url, json=_batch("b2", ["FR", "ES", "IT"]), headers=headers)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == "too_many_segments"
    assert "CALMON_MAX_SEGMENTS_PER_MODEL" in error["message"]
    assert error["details"][0] == {
        "row": 1,
        "field": "segment",
        "message": error["details"][0]["message"],
    }

    # Known segments and one new one up to the cap are fine; then nothing new is.
    assert capped.post(url, json=_batch("b3", ["DE", "ES"]), headers=headers).status_code == 201
    assert capped.post(url, json=_batch("b4", ["IT"]), headers=headers).status_code == 422
    assert (
        capped.post(url, json=_batch("b5", ["FR", "DE", "ES"]), headers=headers).status_code == 201
    )
    # A batch whose own segments pass the cap is refused without a look at the database.
    too_many = capped.post(url, json=_batch("b6", ["a", "b", "c", "d"]), headers=headers)
    assert too_many.status_code == 422
    with session_factory() as session:
        stored = session.scalar(select(func.count()).select_from(Prediction))
    assert stored == 3 + 2 + 3
