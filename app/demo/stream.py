"""The demo's synthetic card-fraud stream: a healthy month, fraud-rate swings, then a slide.

Scores follow Siblini et al.'s Gaussian setup (legitimate N(0, 1), frauds N(mu, 1)) squashed
into (0, 1) by a logistic, so that the threshold 0.5 means "x >= 2". Day by day:

- days 0-13: healthy, fraud rate 1%: the reference;
- days 14-27: the same model while the fraud rate swings (an attack at 3%, a quiet spell at
  0.3%): the measured AP moves, the calibrated AP does not, the verdict is ``prior_shift``;
- from day 28: the model degrades (fraud scores slide from mu 2.8 to 1.3), fraud rate 1%:
  ``performance_drop``;
- the newest ``late_days`` days are sent without labels; their chargebacks follow as a label
  feed for all but the last two, which stay waiting for labels (``insufficient_data``, with a
  nowcast estimated from their scores).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np

HEALTHY_MU = 2.8
DEGRADED_MU = 1.3
BASE_RATE = 0.01
SWINGS = {16: 0.03, 17: 0.03, 18: 0.03, 19: 0.03, 22: 0.003, 23: 0.003, 24: 0.003}
REFERENCE_DAYS = 14
DEGRADED_FROM = 28
UNLABELLED_DAYS = 2  # the newest days whose chargebacks have not come yet


@dataclass(frozen=True)
class DemoDay:
    """One day of predictions; ``labels`` are the truth, sent now or later."""

    day: date
    ids: list[str]
    micros: np.ndarray[Any, np.dtype[np.int64]]
    scores: np.ndarray[Any, np.dtype[np.float64]]
    labels: np.ndarray[Any, np.dtype[np.int8]]
    segments: list[str]

    @property
    def timestamps(self) -> np.ndarray[Any, np.dtype[np.datetime64]]:
        """The rows' instants as numpy datetime64 (UTC)."""
        return self.micros.astype("datetime64[us]")


def fraud_rate(day: int) -> float:
    """The day's true fraud rate."""
    return SWINGS.get(day, BASE_RATE)


def fraud_mu(day: int) -> float:
    """How far the day's fraud scores sit above the legitimate ones (lower is worse)."""
    return DEGRADED_MU if day >= DEGRADED_FROM else HEALTHY_MU


def days(count: int, rows_per_day: int, *, last_day: date, seed: int = 7) -> list[DemoDay]:
    """``count`` days ending on ``last_day`` (the demo uses yesterday, so no row is in the
    future and the newest windows are the ones still waiting for labels)."""
    rng = np.random.default_rng(seed)
    first = last_day - timedelta(days=count - 1)
    result = []
    for number in range(count):
        day = first + timedelta(days=number)
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
        start = int(midnight.timestamp()) * 1_000_000
        frauds = rng.random(rows_per_day) < fraud_rate(number)
        x = rng.normal(0.0, 1.0, rows_per_day) + frauds * fraud_mu(number)
        result.append(
            DemoDay(
                day=day,
                ids=[f"demo-{day.isoformat()}-{i:06d}" for i in range(rows_per_day)],
                micros=np.sort(start + rng.integers(0, 86_400_000_000, rows_per_day)),
                scores=np.round(1.0 / (1.0 + np.exp(-(x - 2.0))), 6),
                labels=frauds.astype(np.int8),
                segments=rng.choice(["web", "pos"], rows_per_day, p=[0.6, 0.4]).tolist(),
            )
        )
    return result
