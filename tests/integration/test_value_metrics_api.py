"""The value metrics and card precision through the API on both backends: rows with amounts and
entities sent over REST, a real worker, the window's detail, a pi0 move (the stored sketch, not
the rows), and the what-if."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import WindowMetrics
from app.metrics import CurveSketch
from tests.support.api import AuthHeaders
from tests.support.streams import day_start
from tests.support.top_k import top_k_precision
from tests.support.worker_data import drain

MODEL = "money"
COST = 4.0
THRESHOLD = 0.6
CAPACITY = 12


def _rows(
    day: int, rng: np.random.Generator, n: int, *, missing: bool = False
) -> list[dict[str, Any]]:
    """``n`` labelled rows with ties (scores on a 0.05 grid) and zero amounts among them;
    ``missing``: the last row has no amount."""
    labels = (rng.random(n) < 0.1).astype(int)
    labels[:2] = [1, 0]
    scores = np.round(np.clip(rng.normal(0.3 + 0.35 * labels, 0.2), 0, 1) / 0.05) * 0.05
    amounts = np.round(rng.lognormal(3.0 + labels, 1.0), 2)
    amounts[::17] = 0.0
    start = day_start(day)
    out = []
    for i in range(n):
        row: dict[str, Any] = {
            "id": f"d{day}-{i}",
            "timestamp": (start + timedelta(minutes=i)).isoformat(),
            "score": float(scores[i]),
            "label": int(labels[i]),
        }
        if not (missing and i == n - 1):
            row["amount"] = float(amounts[i])
            # A card of several transactions, some cards in two windows.
            row["entity"] = f"card-{(i * 7) % (n // 3 + 1)}"
        out.append(row)
    return out


def _card_precision(rows: list[dict[str, Any]]) -> float:
    """The handbook's CP@k: cards at their best score, a fraud if any transaction is, the fraud
    share of the k best (a tie at the k-th card: the mean over its orders)."""
    best: dict[str, tuple[float, int]] = {}
    for r in rows:
        score, fraud = best.get(r["entity"], (-1.0, 0))
        best[r["entity"]] = (max(score, r["score"]), max(fraud, r["label"]))
    scores = np.array([score for score, _ in best.values()])
    frauds = np.array([fraud for _, fraud in best.values()], dtype=np.int64)
    return top_k_precision(scores, frauds, CAPACITY)


def _direct(rows: list[dict[str, Any]]) -> dict[str, float]:
    flagged = [r for r in rows if r["score"] >= THRESHOLD]
    caught = sum(r["amount"] for r in flagged if r["label"] == 1)
    total = sum(r["amount"] for r in rows if r["label"] == 1)
    legit = sum(r["amount"] for r in flagged if r["label"] == 0)
    return {
        "value_recall": caught / total,
        "value_precision": caught / (caught + legit),
        "net_savings": caught - COST * len(flagged),
    }


def _detail(client: TestClient, headers: dict[str, str], day: int) -> Any:
    response = client.get(
        f"/v1/models/{MODEL}/windows/{day_start(day).isoformat()}", headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_value_metrics_from_rows_sent_over_rest(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    admin, read = auth_headers("admin"), auth_headers("read")
    body = {
        "name": MODEL,
        "threshold": THRESHOLD,
        "min_label_coverage": 0.5,
        "reference_windows": 1,
        "reference_min_positives": 1,
        "review_cost": COST,
        "alert_capacity": CAPACITY,
    }
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    rng = np.random.default_rng([24, 20])
    sent = [_rows(0, rng, 400), _rows(1, rng, 60), _rows(2, rng, 300, missing=True)]
    for rows in sent:
        response = client.post(
            f"/v1/models/{MODEL}/batches",
            json={"batch_id": rows[0]["id"], "rows": rows},
            headers=auth_headers("ingest"),
        )
        assert response.status_code in (200, 201), response.text
    drain(session_factory)

    for day in (0, 1):
        detail = _detail(client, read, day)
        for name, value in _direct(sent[day]).items():
            got = detail["metrics"][name]
            assert got["regular"] == pytest.approx(value, rel=1e-12), (day, name)
            assert got["calibrated"] is not None, (day, name)
        recall = detail["metrics"]["value_recall"]
        assert recall["calibrated"] == recall["regular"]
        for name in ("value_recall", "value_precision", "net_savings"):
            # Every row has an amount and a card: the card bootstrap's intervals. Day 1's 60
            # rows sit on 3 cards ((i * 7) % 21), each holding a fraud: e^-3 = 5% of its
            # replicates draw none of them (no rows: value recall, precision and every
            # calibrated value undefined, and regular net savings 0 with no spread, so no t
            # value for its studentized interval), more than a 95% interval's 2.5% tail allows,
            # so they have no interval (the row bootstrap reports them).
            got = detail["metrics"][name]
            for side in ("regular", "calibrated"):
                if day == 1:
                    assert got[f"{side}_ci"] is None, side
                    continue
                assert got[f"{side}_ci"] is not None, (day, name, side)
                low, high = got[f"{side}_ci"]
                assert low <= got[side] <= high, (day, name, side)
        cards = detail["metrics"]["entity_precision_at_k"]
        assert cards["regular"] == pytest.approx(_card_precision(sent[day]), rel=1e-12), day
        assert cards["calibrated"] is not None
    with session_factory() as session:  # the worker kept the card bootstrap's sums
        stored = session.scalars(select(WindowMetrics).order_by(WindowMetrics.window_start))
        kept = [CurveSketch.from_bytes(w.sketch).entity_values for w in stored if w.sketch]
    assert [v is not None for v in kept] == [True, True, False], kept
    missing = _detail(client, read, 2)["metrics"]
    assert missing["value_precision"]["regular"] is None
    assert missing["value_precision"]["regular_ci"] is None
    assert "amount" in missing["value_precision"]["reason"]
    assert missing["entity_precision_at_k"]["regular"] is None
    assert "entity" in missing["entity_precision_at_k"]["reason"]

    # A pi0 move recomputes from the stored sketches: the value metrics survive it.
    before = _detail(client, read, 1)["metrics"]["value_precision"]["calibrated"]
    moved = client.patch(
        f"/v1/models/{MODEL}", json={"pi0": {"policy": "fixed", "value": 0.01}}, headers=admin
    )
    assert moved.status_code == 200, moved.text
    drain(session_factory)
    after = _detail(client, read, 1)["metrics"]
    assert after["value_precision"]["calibrated"] != before
    assert after["value_recall"]["regular"] == pytest.approx(_direct(sent[1])["value_recall"])

    # What-if at pi0 over day 1 alone equals its calibrated values.
    one_day = {"from": day_start(1).isoformat(), "to": day_start(2).isoformat()}
    response = client.post(
        f"/v1/models/{MODEL}/whatif",
        json={**one_day, "priors": [0.01], "range": None},
        headers=read,
    )
    assert response.status_code == 200, response.text
    at = response.json()["priors"][0]["metrics"]
    for name in ("value_recall", "value_precision", "net_savings", "entity_precision_at_k"):
        assert at[name]["value"] == after[name]["calibrated"], name


def test_a_fraud_only_feed_counts_its_silent_rows_flagged_amounts(
    client: TestClient, auth_headers: AuthHeaders, session_factory: sessionmaker[Session]
) -> None:
    """A fraud-only feed (``label_horizon_days``): its rows without a label are legitimate at
    maturity, and the flagged ones' amounts are the legitimate flagged amount of value
    precision (their amounts come from the read's unlabelled rows, app/windows/rows.py::
    evaluated_rows; dropping them fails this test, tried)."""
    admin = auth_headers("admin", "ingest")
    body = {"name": MODEL, "threshold": THRESHOLD, "review_cost": COST, "alert_capacity": 5}
    assert client.post("/v1/models", json=body, headers=admin).status_code == 201
    patched = client.patch(f"/v1/models/{MODEL}", json={"label_horizon_days": 1}, headers=admin)
    assert patched.status_code == 200, patched.text
    rng = np.random.default_rng([24, 21])
    sent = [_rows(day, rng, 300) for day in range(4)]  # days 1-3 move the model's clock on
    for rows in sent:
        silent = [{**r, "label": None} if r["label"] == 0 else r for r in rows]
        response = client.post(
            f"/v1/models/{MODEL}/batches",
            json={"batch_id": rows[0]["id"], "rows": silent},
            headers=admin,
        )
        assert response.status_code == 201, response.text
    drain(session_factory)
    metrics = _detail(client, auth_headers("read"), 0)["metrics"]
    flagged_silent = [r for r in sent[0] if r["label"] == 0 and r["score"] >= THRESHOLD]
    assert sum(r["amount"] for r in flagged_silent) > 0
    for name, value in _direct(sent[0]).items():
        assert metrics[name]["regular"] == pytest.approx(value, rel=1e-12), name
