"""The streams behind the docs' longer examples, so that what the pages print is what a real
server answers on them (tests/integration/test_docs_worlds_replay.py replays the pages).

- **The analyses' 30 days** (docs/analyses.md, the reference re-anchoring of docs/verdicts.md):
  a champion `card-fraud` and a challenger `card-fraud-v2` scored on the same traffic, 20,000
  rows a day from 2026-01-01, the fraud rate on a weekly cycle between about 0.26% and 0.56%,
  every label in (the windows mature at once), three countries as segments.
- **The early estimates' stream** (docs/before-the-labels.md): a fraud-only feed, 2,000 rows and
  about 100 frauds a day, whose fraud scores fall on 2026-01-29 (the stream of
  tests/integration/test_early_api.py, shared through tests/support/early_feed.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import numpy as np

from app.client.http import CalmonClient
from tests.support import early_feed
from tests.support.early_feed import MODEL_SETTINGS as EARLY_SETTINGS

ANALYSES_DAYS, ANALYSES_ROWS = 30, 20_000
ANALYSES_THRESHOLD = 2.5
CHAMPION, CHALLENGER = "card-fraud", "card-fraud-v2"
COUNTRIES = np.array(["FR", "DE", "ES"])
FIRST = datetime(2026, 1, 1, tzinfo=UTC)
DAY_SECONDS = 86_400


def analyses_fraud_rate(number: int) -> float:
    """Day ``number``'s fraud rate: a weekly cycle around 0.4% (fraud peaks at weekends)."""
    return float(0.004 * (1.0 + 0.35 * np.sin(2.0 * np.pi * (number + 1) / 7.0)))


def send_analyses_world(client: CalmonClient) -> None:
    """Register the champion and the challenger and send them the same 30 days, labelled.

    The challenger's fraud scores are tighter (mean 2.7 and spread 0.85 against 2.5 and 1.2);
    on legitimate rows the two models agree up to noise (correlation 0.8), as two models of
    one team do on the same transactions."""
    for name in (CHAMPION, CHALLENGER):
        client.create_model(name, ANALYSES_THRESHOLD, granularity="day", timezone="UTC")
    rng = np.random.default_rng(20260101)
    for number in range(ANALYSES_DAYS):
        frauds = rng.random(ANALYSES_ROWS) < analyses_fraud_rate(number)
        legit = rng.normal(0.0, 1.0, ANALYSES_ROWS)
        champion = np.where(frauds, rng.normal(2.5, 1.2, ANALYSES_ROWS), legit)
        shadow = 0.8 * legit + 0.6 * rng.normal(0.0, 1.0, ANALYSES_ROWS)
        challenger = np.where(frauds, rng.normal(2.7, 0.85, ANALYSES_ROWS), shadow)
        start = FIRST.timestamp() + number * DAY_SECONDS
        seconds = np.sort(start + rng.integers(0, DAY_SECONDS, ANALYSES_ROWS))
        ids = [f"d{number}-{i}" for i in range(ANALYSES_ROWS)]
        countries = COUNTRIES[rng.integers(0, len(COUNTRIES), ANALYSES_ROWS)]
        labels = frauds.astype(int)
        client.send(
            CHAMPION,
            ids=ids,
            timestamps=seconds,
            scores=champion,
            labels=labels,
            segments=countries,
            prefix=f"day-{number}",
        )
        client.send(
            CHALLENGER, ids=ids, timestamps=seconds, scores=challenger, labels=labels,
            prefix=f"day-{number}",
        )  # fmt: skip


def send_early_world(client: CalmonClient, http: httpx.Client) -> None:
    """Register `card-fraud` as tests/integration/test_early_api.py registers its model and send
    that stream to 2026-02-03 (the day the docs read it), with the labels arrived by then;
    ``http`` sends with a token of the ingest scope."""
    client.create_model(CHAMPION, **EARLY_SETTINGS)
    early_feed.send(http, {}, early_feed.DAYS - 1, model=CHAMPION)
