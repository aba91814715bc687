"""Models with windows of exactly known counts, computed by a real worker (analyses tests)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.db.repositories.models import ModelRepository
from app.db.repositories.window_metrics import WindowMetricsRepository
from app.metrics import CurveSketch, pool_sketches
from app.services.periods import POOL_ITERATIONS
from tests.support.api import AuthHeaders
from tests.support.streams import day_start
from tests.support.worker_data import find_model_id, insert_rows

Group = tuple[float, int, int]
"""(score, positives, negatives) of rows tied at one score."""

Window = tuple[npt.NDArray[np.float64], npt.NDArray[np.int8]]


def grouped(groups: Sequence[Group]) -> Window:
    """Scores and labels of a window made of tie groups with exact class counts."""
    scores = np.concatenate([np.full(p + n, s) for s, p, n in groups])
    labels = np.concatenate([np.r_[np.ones(p), np.zeros(n)] for _, p, n in groups])
    return scores.astype(np.float64), labels.astype(np.int8)


def register(
    client: TestClient,
    auth_headers: AuthHeaders,
    name: str,
    threshold: float = 0.5,
    **settings: object,
) -> None:
    """A model whose every fully labelled window is mature (``settings``: any others)."""
    body = {
        "name": name,
        "threshold": threshold,
        "min_label_coverage": 0.5,
        "reference_windows": 1,
        "reference_min_positives": 1,
        **settings,
    }
    response = client.post("/v1/models", json=body, headers=auth_headers("admin"))
    assert response.status_code == 201, response.text


def add_windows(
    sf: sessionmaker[Session], name: str, windows: Sequence[Window], *, first_day: int = 0
) -> None:
    """Insert one window a day from ``first_day`` on (fully labelled)."""
    model = find_model_id(sf, name)
    for offset, (scores, labels) in enumerate(windows):
        day = first_day + offset
        insert_rows(sf, model, day_start(day), scores, labels, prefix=f"{name}-{day}")


def pooled(sf: sessionmaker[Session], name: str, segment: str = "all") -> CurveSketch:
    """The model's stored window sketches pooled, as the analyses pool them."""
    with sf() as session:
        model = ModelRepository(session).get_by_name(name)
        assert model is not None
        repository = WindowMetricsRepository(session)
        starts = [r.window_start for r in repository.period_windows(model.id, segment)]
        stored = repository.sketches(model.id, segment, starts)
    sketches = [CurveSketch.from_bytes(data) for data in stored]
    return pool_sketches(sketches, max_iterations=POOL_ITERATIONS)
