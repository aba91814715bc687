"""Segments side by side at the model's pi0 through the API (issue 27), on windows a real
worker computed: each segment's values are the kernel's on its pooled stored sketches, the
differences exact and inside their intervals; bad baselines and models without segments get a
clear 4xx."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.metrics import evaluate_sketch
from tests.support.analyses import pooled, register
from tests.support.api import AuthHeaders
from tests.support.streams import day_start
from tests.support.worker_data import drain, find_model_id, insert_rows

# Segment: (rows a day, fraud rate, fraud score mean); "all": rows sent without a segment.
SEGMENTS = {"web": (3000, 0.01, 2.5), "shop": (1500, 0.04, 1.2), "all": (1000, 0.02, 1.8)}


def _seed(client: TestClient, auth_headers: AuthHeaders, sf: sessionmaker[Session]) -> None:
    register(client, auth_headers, "cards", threshold=1.5)
    model = find_model_id(sf, "cards")
    rng = np.random.default_rng(11)
    for day in range(4):
        scores, labels, names = [], [], []
        for name, (rows, pi, mean) in SEGMENTS.items():
            y = (rng.random(rows) < pi).astype(np.int8)
            scores.append(
                np.round(np.where(y == 1, rng.normal(mean, 1, rows), rng.normal(size=rows)), 3)
            )
            labels.append(y)
            names += [name] * rows
        insert_rows(
            sf,
            model,
            day_start(day),
            np.concatenate(scores),
            np.concatenate(labels),
            prefix=f"d{day}",
            segments=names,
        )
    drain(sf)


def _get(client: TestClient, headers: dict[str, str], **params: Any) -> Any:
    response = client.get("/v1/models/cards/segments/compare", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_segments_side_by_side_at_pi0(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    _seed(client, auth_headers, session_factory)
    read = auth_headers("read")
    out = _get(client, read, replicates=300)
    assert out["prior_source"] == "pi0"
    assert out["windows"] == 4
    assert out["baseline"] == "all"
    assert [s["segment"] for s in out["segments"]] == ["shop", "web"]
    whole = evaluate_sketch(pooled(session_factory, "cards"), pi0=out["prior"]).calibrated
    for side in out["segments"]:
        sketch = pooled(session_factory, "cards", side["segment"])
        own = evaluate_sketch(sketch, pi0=out["prior"])
        assert (side["labelled"], side["positives"]) == (sketch.n, sketch.positives)
        assert side["pi"] == sketch.positives / sketch.n
        for metric, m in side["metrics"].items():
            mine, theirs = own.calibrated[metric], whole[metric]
            assert mine is not None
            assert theirs is not None
            assert m["value"] == mine, metric
            assert m["difference"] == pytest.approx(mine - theirs, abs=1e-15)
            low, high = m["difference_ci"]
            assert low <= m["difference"] <= high
            assert m["decided"] == (low > 0 or high < 0)
    # The web segment's model separates frauds far better: its AP at pi0 is above the whole's.
    web = out["segments"][1]["metrics"]["average_precision"]
    assert web["difference"] > 0
    assert web["decided"] is True
    assert out["whole"]["metrics"]["average_precision"]["difference"] == 0.0

    against_shop = _get(client, read, baseline="shop", replicates=300)
    shop = against_shop["segments"][0]["metrics"]["average_precision"]
    assert shop["difference"] == 0.0
    assert shop["difference_ci"] is None
    assert against_shop["whole"]["metrics"]["average_precision"]["difference_ci"] is not None

    unknown = client.get(
        "/v1/models/cards/segments/compare", params={"baseline": "nope"}, headers=read
    )
    assert unknown.status_code == 404
    assert "nope" in unknown.text


def test_a_model_without_segments_is_told_so(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    register(client, auth_headers, "plain", threshold=1.5)
    model = find_model_id(session_factory, "plain")
    rng = np.random.default_rng(3)
    y = (rng.random(2000) < 0.05).astype(np.int8)
    insert_rows(session_factory, model, day_start(0), rng.normal(2 * y, 1.0), y)
    drain(session_factory)
    response = client.get("/v1/models/plain/segments/compare", headers=auth_headers("read"))
    assert response.status_code == 422
    assert "no named segment" in response.text
