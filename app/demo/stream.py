"""The demo's synthetic card-fraud stream, and its labels as a fraud team gets them.

Scores follow Siblini et al.'s Gaussian setup (legitimate N(0, 1), frauds N(mu, 1)) squashed
into (0, 1) by a logistic, so that the threshold 0.5 means "x >= 2". Day by day:

- days 0-13: healthy, fraud rate 2%: the reference;
- days 14-27: the same model while the fraud rate swings (an attack at 6%, a quiet spell at
  0.6%): the measured AP moves, the calibrated AP does not, the verdict is ``prior_shift``;
- then healthy again, until the newest ``degraded_days`` days, in which the model degrades
  (fraud scores slide from mu 2.8 to 1.3, fraud rate 2%).

Nobody labels a transaction legitimate (bench/label_feeds.py draws the same feed for the
benches, per score bin; the demo draws it per row):

- **feedback**: investigators review 90% of the alerts (score >= 0.5) the next day, frauds
  (label 1) and cleared alerts (label 0) alike;
- **chargebacks**: every other fraud is disputed after a log-normal delay from its transaction
  (median 12 days, log-sd 1: 2 to 60 days for nine in ten), conditioned on at most the label
  horizon (a redraw of the tail, so the delays' curve has no cliff at the horizon), except 3%
  that are never reported;
- everything else is never labelled: at the horizon it counts as legitimate.

Labels reach calmon in a nightly export: a label's ``labelled_at`` is the midnight (UTC) after
it came in, so each night's export moves the model's clock to the boundary of the day it closes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

THRESHOLD = 0.5
"""The model's threshold: score >= 0.5 flags a transaction (an alert)."""
HEALTHY_MU = 2.8
DEGRADED_MU = 1.3
BASE_RATE = 0.02
SWINGS = {16: 0.06, 17: 0.06, 18: 0.06, 19: 0.06, 22: 0.006, 23: 0.006, 24: 0.006}
REFERENCE_DAYS = 14
DAYS = 62
"""Days of a demo: under a 30-day label horizon, its first 32 days are mature at the end (the
reference, the swings and some calm: 18 judged), the newest 30 still waiting for labels."""
LIVE_DAYS = 8
"""The newest days, sent a night at a time (the older ones are a backfill)."""
DEGRADED_DAYS = 6
"""The newest days, in which the model has degraded."""
ROWS_PER_DAY = 5_000
"""100 frauds a day at 2%: the page came three days after the model degraded with each of
eleven seeds (at 3,000 rows, after three to five days with four)."""
FEEDBACK, CHARGEBACK = "feedback", "chargeback"
NO_LABEL = -1
DAY_MICROS = 86_400_000_000


@dataclass(frozen=True)
class LabelFeed:
    """How a fraud team's labels arrive (the module docstring)."""

    horizon_days: int = 30
    feedback_share: float = 0.9
    chargeback_median_days: float = 12.0
    chargeback_sigma: float = 1.0
    never_reported: float = 0.03


@dataclass(frozen=True)
class StreamPlan:
    """A stream's shape: ``days`` days ending on ``last_day``, the newest ``degraded_days`` of
    them degraded, ``rows_per_day`` predictions a day."""

    days: int
    rows_per_day: int
    last_day: date
    degraded_days: int
    seed: int = 7
    feed: LabelFeed = field(default_factory=LabelFeed)

    @property
    def onset(self) -> date:
        """The first degraded day."""
        return self.last_day - timedelta(days=self.degraded_days - 1)


@dataclass(frozen=True)
class DemoDay:
    """One day of predictions and the labels the team will send for them.

    ``label`` is what eventually arrives (1 fraud, 0 an alert cleared, :data:`NO_LABEL` never
    labelled), ``labelled_at`` the night it arrives (UTC epoch microseconds, ``NO_LABEL`` for
    none) and ``source`` who sent it (``None`` for none).
    """

    day: date
    ids: list[str]
    micros: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    label: npt.NDArray[np.int8]
    labelled_at: npt.NDArray[np.int64]
    source: list[str | None]

    @property
    def timestamps(self) -> npt.NDArray[np.datetime64]:
        """The rows' instants as numpy datetime64 (UTC)."""
        return self.micros.astype("datetime64[us]")

    def labels_by(self, night: datetime) -> npt.NDArray[np.bool_]:
        """The rows whose label has arrived by ``night`` (an export's instant)."""
        arrived: npt.NDArray[np.bool_] = (self.label != NO_LABEL) & (
            self.labelled_at <= _micros(night)
        )
        return arrived

    def labels_at(self, night: datetime) -> npt.NDArray[np.bool_]:
        """The rows whose label comes in the export of ``night``."""
        exported: npt.NDArray[np.bool_] = (self.label != NO_LABEL) & (
            self.labelled_at == _micros(night)
        )
        return exported

    def eventual(self) -> tuple[float, float | None]:
        """The fraud rate and the precision at the threshold the day's complete labels will
        show (never-reported frauds count as legitimate, as calmon counts them at the horizon)."""
        reported = self.label == 1
        flagged = self.scores >= THRESHOLD
        precision = float(reported[flagged].mean()) if flagged.any() else None
        return float(reported.mean()), precision


def fraud_rate(number: int) -> float:
    """Day ``number``'s true fraud rate."""
    return SWINGS.get(number, BASE_RATE)


def days(plan: StreamPlan) -> list[DemoDay]:
    """The plan's days, oldest first (deterministic for a seed)."""
    rng = np.random.default_rng(plan.seed)
    return [_day(rng, plan, number) for number in range(plan.days)]


def midnight(day: date) -> datetime:
    """The start of ``day`` in UTC."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _micros(instant: datetime) -> int:
    return int(instant.timestamp()) * 1_000_000


def _day(rng: np.random.Generator, plan: StreamPlan, number: int) -> DemoDay:
    """Day ``number`` of the plan: its predictions and when their labels will come."""
    day = plan.last_day - timedelta(days=plan.days - 1 - number)
    rows, feed = plan.rows_per_day, plan.feed
    start = _micros(midnight(day))
    frauds = rng.random(rows) < fraud_rate(number)
    mu = DEGRADED_MU if day >= plan.onset else HEALTHY_MU
    x = rng.normal(0.0, 1.0, rows) + frauds * mu
    micros = np.sort(start + rng.integers(0, DAY_MICROS, rows))
    scores = np.round(1.0 / (1.0 + np.exp(-(x - 2.0))), 6)
    flagged = scores >= THRESHOLD
    # Feedback: an alert reviewed the next day, whatever it turns out to be.
    reviewed = flagged & (rng.random(rows) < feed.feedback_share)
    came_in = np.full(rows, np.nan)
    came_in[reviewed] = start + DAY_MICROS * (1.0 + rng.random(int(reviewed.sum())))
    # Chargebacks: the frauds nobody reviewed, but a few never reported.
    disputed = frauds & ~reviewed & (rng.random(rows) >= feed.never_reported)
    delays = _delays(rng, int(disputed.sum()), feed)
    came_in[disputed] = micros[disputed] + DAY_MICROS * delays
    label = np.full(rows, NO_LABEL, dtype=np.int8)
    label[reviewed] = frauds[reviewed]
    label[disputed] = 1
    # The nightly export: each label is stamped with the midnight after it came in.
    labelled_at = np.full(rows, NO_LABEL, dtype=np.int64)
    has = label != NO_LABEL
    labelled_at[has] = (np.ceil(came_in[has] / DAY_MICROS) * DAY_MICROS).astype(np.int64)
    source: list[str | None] = [None] * rows
    for i in np.flatnonzero(reviewed):
        source[i] = FEEDBACK
    for i in np.flatnonzero(disputed):
        source[i] = CHARGEBACK
    return DemoDay(
        day=day,
        ids=[f"demo-{day.isoformat()}-{i:06d}" for i in range(rows)],
        micros=micros,
        scores=scores,
        label=label,
        labelled_at=labelled_at,
        source=source,
    )


def _delays(rng: np.random.Generator, count: int, feed: LabelFeed) -> npt.NDArray[np.float64]:
    """Chargeback delays in days: log-normal, redrawn until within the horizon."""
    median, sigma = feed.chargeback_median_days, feed.chargeback_sigma
    delays: npt.NDArray[np.float64] = median * np.exp(sigma * rng.standard_normal(count))
    while (late := delays > feed.horizon_days).any():
        delays[late] = median * np.exp(sigma * rng.standard_normal(int(late.sum())))
    return delays


def as_datetimes(micros: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """Epoch microseconds as datetime64 (NaT for :data:`NO_LABEL`)."""
    out = micros.astype("datetime64[us]")
    out[micros == NO_LABEL] = np.datetime64("NaT")
    return out
