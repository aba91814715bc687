"""The fraud-only feed of tests/integration/test_early_api.py, shared with the docs' replay
(tests/support/docs_worlds.py): 2,000 rows and about 100 frauds a day from 2026-01-01, whose
fraud scores fall on day 28 (2026-01-29); investigators' verdicts on 90% of the alerts the next
morning, chargebacks for the other frauds days later, nobody labelling a transaction legitimate.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import numpy as np

from tests.support.streams import day_start

ROWS, PI, THRESHOLD = 2_000, 0.05, 1.5  # 100 frauds a day
HEALTHY, BROKEN = 2.5, 1.0
HORIZON = 10  # days: a window's rows without a fraud label count as legitimate 10 days on
DAYS, BREAK = 34, 28
MODEL_SETTINGS = {
    "threshold": THRESHOLD,
    "label_horizon_days": HORIZON,
    "reference_windows": 7,
    "reference_min_positives": 300,
}
"""The model's settings besides its name: a week of reference, as a month of history allows."""


def day(number: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The day's rows, and its labels (each with the instant it arrives)."""
    rng = np.random.default_rng([23, number])
    frauds = rng.random(ROWS) < PI
    mu = BROKEN if number >= BREAK else HEALTHY
    scores = np.where(frauds, rng.normal(mu, 1.0, ROWS), rng.normal(0.0, 1.0, ROWS))
    start = day_start(number)
    moments = start + np.floor(rng.random(ROWS) * 86_400) * timedelta(seconds=1)
    rows = [
        {"id": f"d{number}-{i}", "timestamp": moment.isoformat(), "score": float(score)}
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
        labels.append({"id": f"d{number}-{i}", "label": label, "labelled_at": at, "source": source})
    return rows, labels


def send(client: httpx.Client, ingest: dict[str, str], last_day: int, model: str = "fraud") -> None:
    """Every day's rows up to ``last_day``, and the labels arrived by the end of that day."""
    clock = day_start(last_day + 1)
    for number in range(last_day + 1):
        rows, labels = day(number)
        body = {"batch_id": f"day-{number}", "rows": rows}
        response = client.post(f"/v1/models/{model}/batches", json=body, headers=ingest)
        assert response.status_code in (200, 201), response.text
        arrived = [
            {**entry, "labelled_at": entry["labelled_at"].isoformat()}
            for entry in labels
            if entry["labelled_at"] < clock
        ]
        if arrived:
            response = client.post(
                f"/v1/models/{model}/labels", json={"labels": arrived}, headers=ingest
            )
            assert response.status_code == 200, response.text
