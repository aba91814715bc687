"""Realistic label feeds for fraud models: what a fraud team's labels look like, day by day.

    python -m bench.label_feeds --describe     # the sanity table: the default feed, each variant

Windows follow Siblini et al.'s Gaussian setup (bench/simulation.py): legitimate scores N(0, 1),
fraud scores N(mu, 1), flagged iff score >= THRESHOLD. Each window (a day) of a scenario's
``Day`` (bench/detection.py) gets N rows (``size / mean_pi(days)`` times the day's volume, as the
detection bench does) and its frauds; then its labels arrive the way they do in a fraud team,
fraud-only plus alert feedback: nobody labels a transaction legitimate except an investigator
clearing an alert.

* **Feedback.** A flagged row (fraud or not) is reviewed with probability ``feedback_share``;
  its label arrives the next day (window end + U(0, 1) day). With ``feedback_by_score`` the
  investigators work the day's queue from the top: the review probability falls linearly with
  a row's position in the queue (0 = the top-scored alert, 1 = the last), from 1 at the top
  with the slope that keeps the queue's mean at ``feedback_share`` (for a share >= 1/2 it ends
  at ``1 - 2 (1 - share)``, 0.8 at 0.9; for a smaller share it reaches 0 at ``2 share`` and
  stays there). Each row gets the ramp's mean over its own span of the queue, so the window's
  expected reviewed share is exactly ``feedback_share``, whatever its mix of frauds.
* **Chargebacks.** A fraud nobody reviewed is reported with probability ``1 - never_reported``
  after a log-normal delay from its transaction (median ``chargeback_median_days``, log-sd
  ``chargeback_sigma``), times the run's speed factor (linear from 1 to ``1 + speed_change``
  over the windows) and, when none of the claim's frauds was flagged, ``misses_slower``. The
  delay never passes ``horizon_days``: it is drawn from the log-normal conditioned on the
  horizon (what redrawing until it fits gives, in one inverse-CDF draw). Truncating instead
  would pile the tail (2% of claims at the defaults, 5% when reporting slows by a third) on the
  horizon itself, a cliff in every label-arrival curve that no real feed has; conditioning keeps
  the curve smooth and the reported share at ``1 - never_reported``, at the price of a median a
  little under the nominal one (11.7 days instead of 12 at the defaults; 21.1 instead of 24 for
  misses reported twice as slowly, whose tail past the horizon is 13%).
* **Bursts.** Frauds come per entity (a compromised card or terminal): Poisson(pi N /
  ``burst_mean``) entities of 1 + Poisson(``burst_mean`` - 1) frauds each (pi N frauds expected),
  scores ``mu + sqrt(rho) Z_entity + sqrt(1 - rho) Z_row``. An entity's unreviewed frauds make
  one claim: filed or never filed together, labelled at one instant, the delay counted from its
  latest fraud (a claim cannot precede a transaction it covers) and capped so that its earliest
  fraud's label still arrives within the horizon. Feedback stays per row.

Cost is O(frauds + bins) a window, not O(rows): the legitimate rows are one multinomial over the
partition of the score axis made by the bin edges, the threshold and the frauds' scores, and both
the window's bin counts and its final curve sketch are sums over that one draw.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics import CurveSketch, ScoreHistogram
from app.metrics.types import BoolArray, Float64Array, Int64Array
from bench.detection import DAY0, Day, mean_pi
from bench.label_feeds_draws import (
    final_sketch,
    partition,
    review_probability,
    truncated_lognormal,
)
from bench.simulation import THRESHOLD, healthy_edges

Int8Array = npt.NDArray[np.int8]

NEVER, FEEDBACK, CHARGEBACK = 0, 1, 2
"""``SimWindow.fraud_sources`` codes."""


@dataclass(frozen=True)
class FeedConfig:
    """How labels arrive (see the module docstring); the defaults are the plain feed."""

    horizon_days: int = 60
    feedback_share: float = 0.9
    feedback_by_score: bool = False
    chargeback_median_days: float = 12.0
    chargeback_sigma: float = 0.8
    never_reported: float = 0.03
    speed_change: float = 0.0
    misses_slower: float = 1.0
    burst_mean: float = 1.0
    burst_correlation: float = 0.5

    def __post_init__(self) -> None:
        checks = {
            "horizon_days >= 2": self.horizon_days >= 2,  # a claim's frauds span up to a day
            "0 <= feedback_share <= 1": 0.0 <= self.feedback_share <= 1.0,
            "chargeback_median_days > 0": self.chargeback_median_days > 0,
            "chargeback_sigma > 0": self.chargeback_sigma > 0,
            "0 <= never_reported <= 1": 0.0 <= self.never_reported <= 1.0,
            "speed_change > -1": self.speed_change > -1.0,
            "misses_slower >= 1": self.misses_slower >= 1.0,
            "burst_mean >= 1": self.burst_mean >= 1.0,
            "0 <= burst_correlation <= 1": 0.0 <= self.burst_correlation <= 1.0,
        }
        broken = [rule for rule, ok in checks.items() if not ok]
        if broken:
            raise ValueError(f"FeedConfig needs {', '.join(broken)}")


@dataclass(frozen=True)
class SimWindow:
    """One simulated day: every row on the model's bins, every fraud and cleared alert with
    when its label arrives. Fraud arrays are in entity order (an entity's frauds adjacent)."""

    index: int
    """Day number from the stream's start."""
    start: datetime
    """``DAY0 + index`` days (UTC midnight); the window ends one day later."""
    rows: int
    frauds: int
    """True frauds in the window, reported or not."""
    rows_per_bin: Int64Array
    """Every row on the stream's bins (``len(edges) + 1``, app.metrics.mixture.histogram's)."""
    flagged: int
    """Rows with score >= THRESHOLD."""
    fraud_scores: Float64Array
    fraud_bins: Int64Array
    fraud_entities: Int64Array
    """Entity id, unique within the stream."""
    fraud_times: Float64Array
    """Transaction instant minus the window's start, in days, in [0, 1)."""
    fraud_arrival_days: Float64Array
    """Labelled instant minus the window's END, in days (``inf`` if never reported)."""
    fraud_sources: Int8Array
    """FEEDBACK (1), CHARGEBACK (2) or NEVER (0) reported."""
    cleared_bins: Int64Array
    """One entry per legitimate flagged row an investigator cleared (label 0): its bin."""
    cleared_arrival_days: Float64Array
    """Labelled instant minus the window's end, in days."""
    final: CurveSketch
    """The window as its complete labels show it: reported frauds positive, everything else
    (legitimate rows and never-reported frauds, at their own scores) negative."""


@dataclass(frozen=True)
class Stream:
    """A simulated stream: the model's bins and its windows."""

    edges: Float64Array
    """``bin_edges`` of a 20,000-row healthy window at the first day's fraud rate."""
    windows: list[SimWindow]


def simulate(days: Sequence[Day], size: int, config: FeedConfig, seed: int) -> Stream:
    """A stream of ``days`` (segment ``all``) at ``size`` frauds a window at the stream's mean
    fraud rate. Window ``t`` draws from its own generator (``SeedSequence(seed)``'s child ``t +
    1``), so a stream's windows do not change when it is made longer (except through the speed
    factor, which spans the run)."""
    if not days:
        raise ValueError("a stream needs at least one day")
    edge_seed, *window_seeds = np.random.SeedSequence(seed).spawn(len(days) + 1)
    edges = healthy_edges(np.random.default_rng(edge_seed), days[0].pi)
    rows = size / mean_pi(days)
    windows, entities = [], 0
    for t, (day, window_seed) in enumerate(zip(days, window_seeds, strict=True)):
        speed = 1.0 + config.speed_change * t / max(len(days) - 1, 1)
        draw = _WindowDraw(config, edges, np.random.default_rng(window_seed), speed)
        # round, not int: a mean pi summed in another order must not cost a window a row.
        window = draw.window(t, day, round(rows * day.volume), entities)
        entities += draw.entities
        windows.append(window)
    return Stream(edges=_frozen(edges), windows=windows)


def labelled_by(window: SimWindow, as_of_days: float) -> ScoreHistogram:
    """The window's rows per bin as calmon would hold them ``as_of_days`` after the window's
    end: frauds labelled by then (positives), alerts cleared by then (negatives), the rest
    unlabelled."""
    size = window.rows_per_bin.size
    arrived = window.fraud_arrival_days <= as_of_days
    positives = np.bincount(window.fraud_bins[arrived], minlength=size).astype(np.int64)
    cleared = window.cleared_bins[window.cleared_arrival_days <= as_of_days]
    negatives = np.bincount(cleared, minlength=size).astype(np.int64)
    return ScoreHistogram(positives, negatives, window.rows_per_bin - positives - negatives)


# --- one window ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Frauds:
    scores: Float64Array
    owner: Int64Array
    """Entity, local to the window, non-decreasing."""
    times: Float64Array
    flagged: BoolArray
    reviewed: BoolArray


class _WindowDraw:
    """One window's draws, from its own generator."""

    def __init__(
        self, config: FeedConfig, edges: Float64Array, rng: np.random.Generator, speed: float
    ) -> None:
        self.config, self.edges, self.rng, self.speed = config, edges, rng, speed
        self.entities = 0

    def window(self, index: int, day: Day, n: int, first_entity: int) -> SimWindow:
        scores, owner = self._fraud_scores(day.pi * n, day.mu["all"])
        if scores.size > n:
            raise ValueError(f"window {index}: {scores.size} frauds drawn for {n} rows")
        part = partition(self.rng, n - scores.size, self.edges, scores)
        review = review_probability(
            part, self.config.feedback_share, by_score=self.config.feedback_by_score
        )
        cleared = self.rng.binomial(part.legit, review[0::2])
        point = np.searchsorted(part.points, scores)
        frauds = _Frauds(
            scores=scores,
            owner=owner,
            times=self.rng.random(scores.size),
            flagged=scores >= THRESHOLD,
            reviewed=self.rng.random(scores.size) < review[2 * point + 1],
        )
        arrival = self._chargebacks(frauds)
        arrival[frauds.reviewed] = self.rng.random(int(frauds.reviewed.sum()))
        sources = np.where(
            frauds.reviewed, FEEDBACK, np.where(np.isfinite(arrival), CHARGEBACK, NEVER)
        ).astype(np.int8)
        slot_bins = np.searchsorted(self.edges, part.lower, side="right")
        cleared_bins = np.repeat(slot_bins[0::2], cleared)
        per_bin = np.bincount(slot_bins, weights=part.rows, minlength=self.edges.size + 1)
        return SimWindow(
            index=index,
            start=DAY0 + timedelta(days=index),
            rows=n,
            frauds=scores.size,
            rows_per_bin=_frozen(per_bin.astype(np.int64)),
            flagged=int(part.rows[part.flagged].sum()),
            fraud_scores=_frozen(scores),
            fraud_bins=_frozen(np.searchsorted(self.edges, scores, side="right")),
            fraud_entities=_frozen(first_entity + owner),
            fraud_times=_frozen(frauds.times),
            fraud_arrival_days=_frozen(arrival),
            fraud_sources=_frozen(sources),
            cleared_bins=_frozen(cleared_bins),
            cleared_arrival_days=_frozen(self.rng.random(cleared_bins.size)),
            final=final_sketch(part, point, sources != NEVER),
        )

    def _fraud_scores(self, expected: float, mu: float) -> tuple[Float64Array, Int64Array]:
        """Frauds by entity: Poisson(expected / burst_mean) entities of 1 + Poisson(burst_mean
        - 1) frauds (so ``expected`` frauds on average), scores sharing the entity's draw."""
        mean, rho = self.config.burst_mean, self.config.burst_correlation
        self.entities = int(self.rng.poisson(expected / mean))
        sizes = 1 + self.rng.poisson(mean - 1.0, self.entities)
        owner = np.repeat(np.arange(self.entities, dtype=np.int64), sizes)
        shared = self.rng.standard_normal(self.entities)[owner]
        own = self.rng.standard_normal(owner.size)
        scores: Float64Array = mu + math.sqrt(rho) * shared + math.sqrt(1.0 - rho) * own
        return scores, owner

    def _chargebacks(self, frauds: _Frauds) -> Float64Array:
        """Per fraud, its claim's labelled instant minus the window's end (inf: none). The
        unreviewed frauds of an entity make one claim (module docstring)."""
        config = self.config
        arrival = np.full(frauds.scores.size, np.inf)
        waiting = np.flatnonzero(~frauds.reviewed)
        if waiting.size == 0:
            return arrival
        owner = frauds.owner[waiting]
        new_claim = np.concatenate(([True], owner[1:] != owner[:-1]))
        starts = np.flatnonzero(new_claim)
        claim = np.cumsum(new_claim) - 1
        times = frauds.times[waiting]
        latest = np.maximum.reduceat(times, starts)
        earliest = np.minimum.reduceat(times, starts)
        # A claim with a flagged fraud is noticed sooner (misses_slower is relative to it).
        noticed = np.add.reduceat(frauds.flagged[waiting].astype(np.int64), starts) > 0
        scale = config.chargeback_median_days * self.speed
        median = scale * np.where(noticed, 1.0, config.misses_slower)
        cap = config.horizon_days - (latest - earliest)
        delay = truncated_lognormal(self.rng, median, config.chargeback_sigma, cap)
        filed = self.rng.random(starts.size) >= config.never_reported
        arrival[waiting] = np.where(filed, latest + delay - 1.0, np.inf)[claim]
        return arrival


def _frozen(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.setflags(write=False)
    return a


def main(argv: list[str] | None = None) -> int:
    """The sanity report (bench/label_feeds_report.py)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--describe", action="store_true", help="the sanity table")
    parser.add_argument("--size", type=int, default=100, help="frauds per window")
    parser.add_argument("--windows", type=int, default=400, help="windows per variant")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.describe:
        parser.print_help()
        return 2
    from bench.label_feeds_report import describe  # noqa: PLC0415 (it imports this module)

    describe(size=args.size, windows=args.windows, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
