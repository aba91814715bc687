"""A fraud-only label feed, row by row, for tests that go through the HTTP API.

bench/label_feeds.py simulates a fraud team's labels on score bins (cheap for thousands of
windows, but no rows to send); this is the same story in rows, small enough for an end-to-end
test: a daily stream of the Siblini 3.2 setup (tests/support/streams.py) with the fraud rate
swinging day to day and, from ``drop_day`` on, the frauds' scores falling to
``dropped_mean`` (the model degrading). Labels arrive as they do in a fraud team:

* **feedback**: investigators review ``feedback_share`` of the flagged rows (score at or above
  the threshold), fraud or not, the day after the window (its end plus U(0, 1) day);
* **chargeback**: a fraud nobody reviewed is reported ``chargeback_median_days`` (median,
  log-normal of log-sd 0.8, conditioned on the horizon) after its transaction, unless it is
  among the ``never_reported`` share;
* nothing else: nobody labels a transaction legitimate, so the model needs
  ``label_horizon_days`` = ``horizon_days``.

The stream is observed at ``as_of`` (the end of its last day): a label that arrives later is not
sent. Every label carries its ``labelled_at`` and ``source``. The model's clock is then its newest
event, the last day's last row: that day's window is still open, the one before it just ended.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from tests.support.streams import day_start, gaussian_window

_DAY_MS = 86_400_000


@dataclass(frozen=True)
class FeedSpec:
    """One fraud-only feed (defaults: a few weeks of small windows, no drop)."""

    days: int = 28
    rows_per_day: int = 4_000
    threshold: float = 1.5
    positive_mean: float = 2.0
    drop_day: int | None = None
    dropped_mean: float = 1.0
    pi_low: float = 0.006
    pi_high: float = 0.02
    horizon_days: int = 7
    feedback_share: float = 0.9
    chargeback_median_days: float = 2.0
    never_reported: float = 0.03
    seed: int = 0

    @property
    def as_of(self) -> datetime:
        """When the stream is observed: the end of its last day."""
        return day_start(self.days)


@dataclass(frozen=True)
class FeedDay:
    """One day's rows and the labels that arrived by ``as_of`` (label None: none yet)."""

    index: int
    window_start: datetime
    pi: float
    positive_mean: float
    scores: npt.NDArray[np.float64]
    labels: list[int | None]
    labelled_at: list[str | None]
    sources: list[str | None]


def _iso(ms: npt.NDArray[np.int64]) -> list[str]:
    stamps = np.char.add(np.datetime_as_string(ms.astype("datetime64[ms]"), unit="ms"), "Z")
    return [str(s) for s in stamps.tolist()]


def _chargeback_delays(spec: FeedSpec, rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
    """Days from transaction to chargeback: log-normal conditioned on the horizon (one
    inverse-CDF draw, so that no delay piles up on the horizon itself)."""
    sigma = 0.8
    top = float(stats.norm.cdf(math.log(spec.horizon_days / spec.chargeback_median_days) / sigma))
    quantiles = rng.uniform(0.0, top, n)
    normal: npt.NDArray[np.float64] = stats.norm.ppf(quantiles)
    return spec.chargeback_median_days * np.exp(sigma * normal)


def feed(spec: FeedSpec) -> Iterator[FeedDay]:
    """The feed's days, in order, reproducible from ``spec.seed``."""
    rng = np.random.default_rng(spec.seed)
    observed = int(spec.as_of.timestamp() * 1000)
    for index in range(spec.days):
        pi = float(np.exp(rng.uniform(np.log(spec.pi_low), np.log(spec.pi_high))))
        dropped = spec.drop_day is not None and index >= spec.drop_day
        mu = spec.dropped_mean if dropped else spec.positive_mean
        scores, truth = gaussian_window(rng, spec.rows_per_day, pi, mu)
        n = scores.size
        start = int(day_start(index).timestamp() * 1000)
        stamps = start + np.arange(n, dtype=np.int64) * (_DAY_MS // n)
        fraud = truth == 1
        reviewed = (scores >= spec.threshold) & (rng.random(n) < spec.feedback_share)
        arrival = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        feedback_at = start + _DAY_MS + (rng.random(n) * _DAY_MS).astype(np.int64)
        arrival[reviewed] = feedback_at[reviewed]
        claimed = fraud & ~reviewed & (rng.random(n) >= spec.never_reported)
        delays = _chargeback_delays(spec, rng, n)
        arrival[claimed] = stamps[claimed] + (delays[claimed] * _DAY_MS).astype(np.int64)
        seen = (arrival <= observed).tolist()
        times = _iso(np.where(seen, arrival, 0))
        kinds = np.where(reviewed, "feedback", "chargeback").tolist()
        yield FeedDay(
            index=index,
            window_start=day_start(index),
            pi=pi,
            positive_mean=mu,
            scores=scores,
            labels=[int(t) if s else None for t, s in zip(truth.tolist(), seen, strict=True)],
            labelled_at=[t if s else None for t, s in zip(times, seen, strict=True)],
            sources=[k if s else None for k, s in zip(kinds, seen, strict=True)],
        )


def feed_batch(day: FeedDay, *, prefix: str) -> dict[str, Any]:
    """The day as one columnar ingest batch, each label with its time and source."""
    n = day.scores.size
    start = int(day.window_start.timestamp() * 1000)
    stamps = _iso(start + np.arange(n, dtype=np.int64) * (_DAY_MS // n))
    return {
        "batch_id": f"{prefix}-{day.index}",
        "columns": {
            "id": [f"{prefix}-{day.index}-{i}" for i in range(n)],
            "timestamp": stamps,
            "score": day.scores.tolist(),
            "label": day.labels,
            "labelled_at": day.labelled_at,
            "source": day.sources,
        },
    }


def feed_model(spec: FeedSpec, name: str, **settings: object) -> dict[str, Any]:
    """The registration body of a model fed by ``spec``: its threshold and label horizon."""
    return {
        "name": name,
        "threshold": spec.threshold,
        "label_horizon_days": spec.horizon_days,
        **settings,
    }
