"""A fraud-only feed through the API and the worker (both backends): label times and sources,
maturity on the model's clock, withheld values, early estimates and an early page.

The feed is what fraud teams get: investigators' verdicts on the alerts they review the next
day, chargebacks for the other frauds days later, nobody labelling a transaction legitimate.
History is sent as a backfill (its label times in the past); the model then breaks and the
windows after the break are judged on their early labels only.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.windows import early
from tests.support.api import AuthHeaders, get_json
from tests.support.early_feed import BREAK, DAYS, HORIZON, MODEL_SETTINGS, day, send
from tests.support.streams import day_start
from tests.support.worker_data import drain


def test_a_fraud_only_feed_matures_on_the_clock_and_pages_on_early_labels(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin, read, ingest = auth_headers("admin"), auth_headers("read"), auth_headers("ingest")
    body = {"name": "fraud", **MODEL_SETTINGS}
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    send(client, ingest, DAYS - 1)
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
    # What a burst counted as: at least the evidence's dispersion (the reference's frauds).
    assert early["bursts"] >= early["evidence"]["dispersion"] >= 1.0

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
    body = {"name": "fraud", **MODEL_SETTINGS}
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    send(client, ingest, DAYS - 2)
    drain(session_factory)
    rows, _labels = day(DAYS - 1)  # the next day's predictions alone: one window dirty, a new look
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
