"""The nowcast through the worker and the API (both backends): windows without labels get a
fraud rate and expected metrics estimated from their scores, a moved score distribution gets
the provisional verdict score_shift, and the estimate stays beside the realised values once the
labels arrive.

Windows go straight into the database and a worker drains them in-process, as in
tests/integration/test_detector_api.py.
"""

from __future__ import annotations

from datetime import UTC

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import ScoreBins, WindowMetrics
from app.windows import nowcasting
from tests.support.api import AuthHeaders, get_json
from tests.support.streams import day_start, gaussian_window
from tests.support.worker_data import drain, find_model_id, insert_rows, set_labels

ROWS, REFERENCE_PI, MU = 4_000, 0.05, 2.0
# Unlabelled days after the 5-day reference: (fraud rate, shift of the legitimate scores).
UNLABELLED = {5: (0.02, 0.0), 6: (0.10, 0.0), 7: (0.05, 0.3)}


def _register(client: TestClient, admin: dict[str, str], sf: sessionmaker[Session]) -> int:
    body = {"name": "fraud", "threshold": 1.5, "reference_windows": 5}
    body["reference_min_positives"] = 100
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    return find_model_id(sf, "fraud")


def _day(sf: sessionmaker[Session], model_id: int, day: int, rows: int = ROWS) -> np.ndarray:
    """Insert day ``day`` (labelled in the reference, unlabelled after); returns its labels."""
    pi, shift = UNLABELLED.get(day, (REFERENCE_PI, 0.0))
    scores, labels = gaussian_window(np.random.default_rng([5, day]), rows, pi, MU)
    scores = np.where(labels == 0, scores + shift, scores)
    shown: list[int | None] = list(labels) if day not in UNLABELLED else [None] * rows
    insert_rows(sf, model_id, day_start(day), scores, shown, prefix=f"d{day}")
    return labels


def test_nowcasts_windows_without_labels_and_keeps_them_when_labels_arrive(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin, read = auth_headers("admin"), auth_headers("read")
    model_id = _register(client, admin, session_factory)
    truth = {day: _day(session_factory, model_id, day) for day in range(8)}
    drain(session_factory)

    points = get_json(client, read, "/v1/models/fraud/metrics?metric=precision")["points"]
    assert [p["verdict"] for p in points] == ["reference"] * 5 + [
        "insufficient_data",
        "insufficient_data",
        "score_shift",
    ]
    assert all(p["nowcast"] is None for p in points[:5])  # no estimate fitted to itself
    for day in (5, 6):
        nowcast = points[day]["nowcast"]
        assert nowcast["estimate"] is True
        assert nowcast["reference_version"] == 1
        assert not nowcast["score_shift"]
        low, high = nowcast["pi_ci"]
        assert low <= truth[day].mean() <= high
        assert nowcast["ci"][0] <= nowcast["value"] <= nowcast["ci"][1]
        assert points[day]["regular"] is None  # nothing measured yet: the estimate stands alone
    assert points[6]["nowcast"]["value"] > points[5]["nowcast"]["value"]  # more fraud, fewer FPs
    shifted = points[7]
    assert shifted["nowcast"]["score_shift"]
    assert shifted["nowcast"]["fit_p_value"] < 1e-3
    assert not shifted["judged"]
    reason = get_json(client, read, f"/v1/models/fraud/windows/{day_start(7).isoformat()}")
    assert reason["verdict_reason"].startswith("score shift")
    recall = get_json(client, read, "/v1/models/fraud/metrics?metric=recall")["points"][5]
    assert recall["nowcast"]["value"] is None
    assert "not estimated" in recall["nowcast"]["reason"]

    detail = get_json(client, read, f"/v1/models/fraud/windows/{day_start(5).isoformat()}")
    nowcast = detail["nowcast"]
    assert nowcast["rows"] == ROWS
    assert set(nowcast["expected"]) == {"precision", "f1", "average_precision"}
    assert nowcast["fit"]["p_value"] > 1e-3
    assert nowcast["adjusted_count"] is not None
    # The reference's fraud dispersion, from its 5 windows (too few for the tilt's: 1).
    assert nowcast["dispersion"]["windows"] == 5
    assert nowcast["dispersion"]["tilt"] == 1.0
    assert nowcast["dispersion"]["bins"] >= 1.0
    assert nowcast["fit"]["dispersion"] >= 1.0
    before = nowcast

    # Labels arrive for day 5: it is judged, and its nowcast stays, beside the realised values.
    labels = {f"d5-{i}": int(y) for i, y in enumerate(truth[5])}
    set_labels(session_factory, model_id, day_start(5), labels)
    drain(session_factory)
    detail = get_json(client, read, f"/v1/models/fraud/windows/{day_start(5).isoformat()}")
    assert detail["judged_at"] is not None
    assert detail["verdict"] in {"stable", "prior_shift"}
    assert detail["pi"] == truth[5].mean()
    assert detail["nowcast"] == before  # the same scores, the same reference: the same estimate
    realised = detail["metrics"]["precision"]["regular"]
    low, high = detail["nowcast"]["expected"]["precision"]["ci"]
    assert low <= realised <= high


def test_bins_cut_late_count_the_windows_stored_before(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """A model's first window is too small to cut bins from; the next one cuts them, and the
    first is counted again from its raw rows."""
    model_id = _register(client, auth_headers("admin"), session_factory)
    _day(session_factory, model_id, 0, rows=500)
    drain(session_factory)
    with session_factory() as session:
        assert session.get(ScoreBins, model_id) is None
        first = session.scalar(select(WindowMetrics.score_counts))
        assert first is None
    _day(session_factory, model_id, 1)
    drain(session_factory)
    with session_factory() as session:
        bins = session.get(ScoreBins, model_id)
        assert bins is not None
        assert bins.window_start == day_start(1)
        counts = session.execute(
            select(WindowMetrics.window_start, WindowMetrics.score_counts, WindowMetrics.flagged)
        ).all()
    assert len(counts) == 2
    assert all(c is not None and flagged is not None for _, c, flagged in counts)


def test_a_lasting_fraud_score_shift_adds_up_across_windows(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """Frauds score lower from day 5 on (their mean 2.0 -> 1.2): each window alone is within
    its noise, but the recent test (the window with the windows before it, counts added up)
    sees the shift while every label is still missing."""
    read = auth_headers("read")
    model_id = _register(client, auth_headers("admin"), session_factory)
    for day in range(5):
        _day(session_factory, model_id, day)
    for day in range(5, 12):
        scores, _ = gaussian_window(np.random.default_rng([6, day]), ROWS, REFERENCE_PI, 1.2)
        insert_rows(
            session_factory, model_id, day_start(day), scores, [None] * ROWS, prefix=f"d{day}"
        )
    drain(session_factory)
    points = get_json(client, read, "/v1/models/fraud/metrics?metric=precision")["points"][5:]
    nowcasts = [p["nowcast"] for p in points]
    assert nowcasts[0]["recent_fit_p_value"] is None  # nothing before it to add up
    assert [n["recent_fit_p_value"] is not None for n in nowcasts[1:]] == [True] * 6
    caught = [
        p["window_start"]
        for p, n in zip(points, nowcasts, strict=True)
        if n["fit_p_value"] >= 1e-3
        and n["recent_fit_p_value"] is not None
        and n["recent_fit_p_value"] < 1e-3
    ]
    assert caught, [(n["fit_p_value"], n["recent_fit_p_value"]) for n in nowcasts]
    detail = get_json(client, read, f"/v1/models/fraud/windows/{caught[-1]}")
    assert detail["verdict"] == "score_shift"
    assert "windows together" in detail["verdict_reason"]
    assert detail["nowcast"]["recent_fit"]["windows"] >= 2


@pytest.mark.timeout(120)
def test_more_segments_waiting_than_a_pass_may_estimate_still_get_every_nowcast(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pass estimates at most NOWCASTS_PER_PASS windows and re-dirties the newest window so the
    next pass goes on; recomputing that window drops its estimates in every segment. With more
    segments waiting than the budget, each pass used to redo the newest windows and never reach
    the others (the drain never ended). Here: 4 segments' windows waiting, a budget of 1."""
    monkeypatch.setattr(nowcasting, "NOWCASTS_PER_PASS", 1)
    model_id = _register(client, auth_headers("admin"), session_factory)
    countries = ["FR", "DE", "ES"]
    for day in range(8):
        pi, shift = UNLABELLED.get(day, (REFERENCE_PI, 0.0))
        rng = np.random.default_rng([6, day])
        scores, labels = gaussian_window(rng, ROWS, pi, MU)
        scores = np.where(labels == 0, scores + shift, scores)
        shown: list[int | None] = list(labels) if day not in UNLABELLED else [None] * ROWS
        segments = [countries[i % 3] for i in range(ROWS)]
        insert_rows(session_factory, model_id, day_start(day), scores, shown,
                    prefix=f"d{day}", segments=segments)  # fmt: skip
    drain(session_factory)
    with session_factory() as session:
        estimated = session.execute(
            select(WindowMetrics.window_start, WindowMetrics.segment).where(
                WindowMetrics.model_id == model_id,
                WindowMetrics.nowcast_reference_version.is_not(None),
            )
        ).all()
    expected = {(day_start(d), s) for d in UNLABELLED for s in ["all", *countries]}
    assert {(start.replace(tzinfo=UTC), segment) for start, segment in estimated} == expected
