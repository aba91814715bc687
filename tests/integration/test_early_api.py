"""A fraud-only feed through the API and the worker (both backends): label times and sources,
maturity on the model's clock, withheld values, early estimates and an early page.

The feed is what fraud teams get: investigators' verdicts on the alerts they review the next
day, chargebacks for the other frauds days later, nobody labelling a transaction legitimate.
History is sent as a backfill (its label times in the past); the model then breaks and the
windows after the break are judged on their early labels only.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.windows import early
from tests.support.api import AuthHeaders, get_json
from tests.support.streams import day_start
from tests.support.worker_data import drain

ROWS, PI, THRESHOLD = 2_000, 0.05, 1.5  # 100 frauds a day
HEALTHY, BROKEN = 2.5, 1.0
HORIZON = 10  # days: a window's rows without a fraud label count as legitimate 10 days on
DAYS, BREAK = 34, 28


def _day(day: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The day's rows, and its labels (each with the instant it arrives)."""
    rng = np.random.default_rng([23, day])
    frauds = rng.random(ROWS) < PI
    mu = BROKEN if day >= BREAK else HEALTHY
    scores = np.where(frauds, rng.normal(mu, 1.0, ROWS), rng.normal(0.0, 1.0, ROWS))
    start = day_start(day)
    moments = start + np.floor(rng.random(ROWS) * 86_400) * timedelta(seconds=1)
    rows = [
        {"id": f"d{day}-{i}", "timestamp": moment.isoformat(), "score": float(score)}
        for i, (moment, score) in enumerate(zip(moments, scores, strict=True))
    ]
    labels = []
    reviewed = (scores >= THRESHOLD) & (rng.random(ROWS) < 0.9)
    delays = np.minimum(np.exp(np.log(3.0) + 0.7 * rng.normal(size=ROWS)), HORIZON - 1)
    for i in range(ROWS):
        if reviewed[i]:  # the investigators' verdict on the alert, the next morning
            at, label, source = start + timedelta(days=1, hours=9), int(frauds[i]), "feedback"
        elif frauds[i]:  # a chargeback, days after the transaction
            at, label, source = moments[i] + timedelta(days=float(delays[i])), 1, "chargeback"
        else:
            continue
        labels.append({"id": f"d{day}-{i}", "label": label, "labelled_at": at, "source": source})
    return rows, labels


def _send(client: TestClient, ingest: dict[str, str], last_day: int) -> None:
    """Every day's rows up to ``last_day``, and the labels arrived by the end of that day."""
    clock = day_start(last_day + 1)
    for day in range(last_day + 1):
        rows, labels = _day(day)
        body = {"batch_id": f"day-{day}", "rows": rows}
        response = client.post("/v1/models/fraud/batches", json=body, headers=ingest)
        assert response.status_code in (200, 201), response.text
        arrived = [
            {**entry, "labelled_at": entry["labelled_at"].isoformat()}
            for entry in labels
            if entry["labelled_at"] < clock
        ]
        if arrived:
            response = client.post(
                "/v1/models/fraud/labels", json={"labels": arrived}, headers=ingest
            )
            assert response.status_code == 200, response.text


def test_a_fraud_only_feed_matures_on_the_clock_and_pages_on_early_labels(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin, read, ingest = auth_headers("admin"), auth_headers("read"), auth_headers("ingest")
    body = {
        "name": "fraud",
        "threshold": THRESHOLD,
        "label_horizon_days": HORIZON,
        "reference_windows": 7,
        "reference_min_positives": 300,
    }
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    _send(client, ingest, DAYS - 1)
    drain(session_factory)

    points = get_json(client, read, "/v1/models/fraud/metrics", metric="average_precision")[
        "points"
    ]
    mature = [p["mature"] for p in points]
    # The clock is the newest event received, late on day 33: a window is mature once its end
    # is 10 days behind it (day 22 ended on day 23's start), the newest eleven are not.
    assert mature == [True] * (DAYS - HORIZON - 1) + [False] * (HORIZON + 1)
    assert points[0]["verdict"] == "reference"
    for point in points[DAYS - HORIZON - 1 :]:
        # No measured value rests on early labels (no pi = 1.0, no AP = 1.0)...
        assert (point["pi"], point["regular"], point["calibrated"]) == (None, None, None)
        assert "withheld" in point["reason"]
    # ...each shows what its labels so far say, as an estimate.
    after_break = [p for p in points if p["window_start"] >= day_start(BREAK).isoformat()]
    estimated = [p for p in after_break if p["early"] and p["early"]["value"] is not None]
    assert estimated, after_break
    assert all(p["early"]["estimate"] and p["early"]["variant"] == "calibrated" for p in estimated)

    # The window detail has the labels so far by source and the alerts' precision from feedback.
    start = day_start(DAYS - 3).isoformat()
    detail = get_json(client, read, f"/v1/models/fraud/windows/{start}")
    assert detail["mature"] is False
    assert detail["curves"] == {}
    early = detail["early"]
    assert early["labels_so_far"]["by_source"]["feedback"] > 0
    assert early["alert_precision_feedback"]["reviewed"] > 0
    assert early["pi"]["ci"][0] <= early["pi"]["value"] <= early["pi"]["ci"][1]

    # The model broke six days ago: its windows are far from mature, and it pages on their
    # early labels (feedback, the first chargebacks).
    alerts = get_json(client, read, "/v1/models/fraud/alerts")
    (whole,) = alerts["segments"]
    assert whole["state"] == "drop", whole
    assert whole["signals"] == ["early"]
    assert whole["early"]["paging"]
    assert whole["early"]["drop_evidence"] > whole["threshold"]
    assert whole["episode_start"] >= day_start(BREAK).isoformat()


def test_a_pass_estimates_within_its_budget_and_the_next_passes_go_on(
    client: TestClient,
    auth_headers: AuthHeaders,
    session_factory: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two estimates a pass. A new day moves the look: every waiting window is to estimate
    # again, more than the one window that day dirties gives passes for; each pass re-dirties
    # the newest window, and the passes go on until every window is at the new look.
    monkeypatch.setattr(early, "EARLY_PER_PASS", 2)
    admin, read, ingest = auth_headers("admin"), auth_headers("read"), auth_headers("ingest")
    body = {
        "name": "fraud",
        "threshold": THRESHOLD,
        "label_horizon_days": HORIZON,
        "reference_windows": 7,
        "reference_min_positives": 300,
    }
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    _send(client, ingest, DAYS - 2)
    drain(session_factory)
    rows, _labels = _day(DAYS - 1)  # the next day's predictions alone: one window dirty, a new look
    body = {"batch_id": "next-day", "rows": rows}
    assert client.post("/v1/models/fraud/batches", json=body, headers=ingest).status_code == 201
    drain(session_factory)
    points = get_json(client, read, "/v1/models/fraud/metrics", metric="average_precision")[
        "points"
    ]
    after_reference = points[6]["window_start"]
    waiting = [p for p in points if not p["mature"] and p["window_start"] > after_reference]
    looks = {p["early"]["as_of"] for p in waiting if p["early"] is not None}
    assert looks == {day_start(DAYS - 1).isoformat().replace("+00:00", "Z")}, looks
    (whole,) = get_json(client, read, "/v1/models/fraud/alerts")["segments"]
    assert whole["signals"] == ["early"]
