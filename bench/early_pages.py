"""Early estimates and early pages on realistic label feeds (issue 23).

    python -m bench.early_pages                  # every table (long: an hour or more)
    python -m bench.early_pages --quick          # a smoke run of every section
    python -m bench.early_pages --sections drops --streams 30 --sizes 100

The streams are bench/label_feeds.py's: fraud-only feeds with investigators' feedback on 90% of
the alerts the next day, chargebacks for the other frauds after a log-normal delay (median 12
days, at most the 60-day horizon), 3% of frauds never reported, and the variants (reporting
speeding up or slowing down by a third over the run, misses disputed more slowly than caught
frauds, frauds in bursts per entity, investigators working the queue from the top). The engine
runs calmon's own domain code day by day, as the worker does on a model with
``label_horizon_days`` = 60: maturity on the model's clock, pi0, the automatic reference, the
judged drop detector (bench/detection.py's Engine) and, for every window after the reference not
mature yet, the early estimates and the early evidence (app/monitoring/early.py), continued from
the judged detector's state. Sizes are the mean frauds per window.

Sections:

* ``drift``: the model unchanged, the fraud rate moving (20x day to day, weekly cycles,
  attacks, a trend, steady) under each reporting variant. Every page is false.
* ``drops``: calibrated AP -40% from day ``change`` on (the frauds' scores fall), with the fraud
  rate steady (``step``) or doubling at the change so that the measured AP barely moves
  (``masked``). Days from the onset to the page, the signal it rests on, and whether the page
  held without clearing until the windows matured.
* ``estimates``: the early fraud rate, precision, recall and calibrated AP against what the
  complete labels showed: error and 95% interval coverage by look (days after the window), on
  healthy streams and in the week after a drop, beside the scores-only estimate of the fraud rate
  (app/metrics/nowcast.py) on the same windows.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

import numpy as np

from app.metrics import ClassHistogram, CurveSketch, evaluate_sketch, nowcast_window
from app.metrics.reporting import Arrivals
from app.metrics.tilt import binned_average_precision
from app.monitoring.detector import WindowIncrement, continue_detector, threshold_for
from app.monitoring.early import (
    DEVELOPMENT_WINDOWS,
    DISPERSION_WINDOWS,
    MeasuredNow,
    ReferenceBins,
    ReportingDesign,
    SegmentReporting,
)
from app.monitoring.maturity import MaturityRule
from app.monitoring.vocabulary import LABEL_SOURCE_CODES
from bench.detection import DAY0, DETECTION_DROP, Day, Engine, degradation, prior_drift
from bench.label_feeds import FeedConfig, SimWindow, Stream, simulate
from bench.simulation import HEALTHY_MU, THRESHOLD, mu_for

HORIZON_DAYS = 60
LOOKS = (1, 3, 7)
"""Looks (days after a window's end) at which estimates are scored."""
# Chargebacks 2 to 60 days after the transaction (the README's figure: the 5th and 95th
# percentiles of a log-normal of median 12 days and log-sd 1).
_BASE = FeedConfig(horizon_days=HORIZON_DAYS, chargeback_sigma=1.0)
VARIANTS: dict[str, FeedConfig] = {
    "base": _BASE,
    "faster": replace(_BASE, speed_change=-1 / 3),
    "slower": replace(_BASE, speed_change=1 / 3),
    "misses_slower": replace(_BASE, misses_slower=1.5),
    "bursts": replace(_BASE, burst_mean=3.0),
    "top_first": replace(_BASE, feedback_by_score=True),
}
DRIFTS = ("day_to_day", "weekly", "attacks", "trend", "steady")


def _arrivals(window: SimWindow) -> Arrivals:
    """A simulated window's labels as the worker stores them: by look (a day)."""
    reported = np.isfinite(window.fraud_arrival_days)
    looks = np.maximum(np.ceil(window.fraud_arrival_days[reported]), 0).astype(np.int64)
    cleared = np.maximum(np.ceil(window.cleared_arrival_days), 0).astype(np.int64)
    return Arrivals.of(
        frauds=(window.fraud_bins[reported], looks, window.fraud_sources[reported]),
        cleared=(
            np.ones(cleared.size, dtype=np.int64),
            cleared,
            np.full(cleared.size, LABEL_SOURCE_CODES["feedback"]),
        ),
    )


def _measured(window: SimWindow, look: int, edges: np.ndarray) -> MeasuredNow | None:
    """The window as its labels show it at ``look``: the frauds labelled by then positive,
    every other row legitimate (its evaluation in a model with a label horizon)."""
    final = window.final
    days = window.fraud_arrival_days
    reported = np.isfinite(days)
    late = reported & (np.ceil(np.maximum(np.where(reported, days, 0.0), 0.0)) > look)
    entries = np.searchsorted(-final.scores, -window.fraud_scores[late])
    positives = final.positives_at.copy()
    tied = final.negatives_tied.copy()
    np.subtract.at(positives, entries, 1)
    np.add.at(tied, entries, 1)
    now = CurveSketch.of_counts(
        n=final.n,
        threshold=final.threshold,
        scores=final.scores,
        positives_at=positives,
        negatives_tied=tied,
        negatives_between=final.negatives_between,
        negatives_below=final.negatives_below,
    )
    if not 0 < now.positives < now.n:
        return None
    frauds = np.bincount(window.fraud_bins[reported & ~late], minlength=edges.size + 1)
    return MeasuredNow.of(now, edges, frauds.astype(np.float64))


def _reported_bins(window: SimWindow, bins: int) -> np.ndarray:
    reported = np.isfinite(window.fraud_arrival_days)
    return np.bincount(window.fraud_bins[reported], minlength=bins).astype(np.float64)


@dataclass
class EstimateRecord:
    """One early estimate against what the complete labels showed."""

    window: int
    look: int
    metric: str
    value: float | None
    interval: tuple[float, float] | None
    truth: float | None


@dataclass
class StreamLog:
    """What happened on one stream: per look day, the alert; the estimates scored."""

    judged: int = 0
    paging: dict[int, tuple[bool, bool]] = field(default_factory=dict)
    """look day -> (paging on judged windows alone, paging with the early evidence)."""
    estimates: list[EstimateRecord] = field(default_factory=list)
    scores_only: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)
    """(window, look) -> (scores-only pi, true pi) for the windows scored."""

    def episodes(self) -> int:
        """Times the page went on (early or judged)."""
        days = sorted(self.paging)
        on = [self.paging[d][1] or self.paging[d][0] for d in days]
        return sum(1 for i, v in enumerate(on) if v and (i == 0 or not on[i - 1]))

    def first_page(self, after: int) -> tuple[int, bool] | None:
        """The first look day at or after ``after`` that pages, and whether early evidence
        alone held it then."""
        for day in sorted(d for d in self.paging if d >= after):
            judged, early = self.paging[day]
            if judged or early:
                return day, not judged
        return None


class EarlyEngine:
    """calmon's domain code on one simulated stream, a look a day (see the module docstring).

    ``score`` says which windows' estimates are scored; ``oracle_tilt``, when given, replaces
    calmon's early test by the best one the labels allow: the true drop's tilt against exactly
    no drop, no allowance for the reference's or the reporting's uncertainty, no dispersion (the
    bound the drops table compares with).
    """

    def __init__(
        self,
        stream: Stream,
        *,
        seed: int,
        score: Callable[[int], bool] = lambda _: False,
        oracle_tilt: float | None = None,
    ) -> None:
        self.stream = stream
        self.seed = seed
        self.score = score
        self.oracle_tilt = oracle_tilt
        self.rule = MaturityRule(0.8, horizon=timedelta(days=HORIZON_DAYS))
        self.engine = Engine(["all"], seed=seed, maturity=self.rule)
        self.bins = stream.edges.size + 1
        self.threshold_bin = int(np.searchsorted(stream.edges, THRESHOLD, side="right"))
        self.arrivals = [_arrivals(w) for w in stream.windows]
        self.log = StreamLog()
        self._was_paging = False

    def run(self) -> StreamLog:
        """Every look day from the first window's end to the last's."""
        for day in range(1, len(self.stream.windows) + 1):
            self.look(day)
        self.log.judged = len(self.engine.logs["all"].judged)
        return self.log

    def look(self, day: int) -> None:
        """What the worker does at the look ``day`` (the clock at the start of that day)."""
        window = self.stream.windows[day - 1]
        final = window.final
        self.engine.observe(day - 1, "all", final, window.rows)
        # A horizon-mode window counts every row: its unlabelled rows are legitimate at maturity.
        counts = self.engine.counts[(day - 1, "all")]
        self.engine.counts[(day - 1, "all")] = replace(
            counts, labelled=final.n, positives=final.positives, label_coverage=1.0
        )
        self.engine.maturity = replace(self.rule, clock=DAY0 + timedelta(days=day))
        if "all" in self.engine.references and self.engine.pi0 is not None:
            # The judged windows are weighed with the dispersion too, as the worker does.
            self.engine.dispersion = self._reference(self.engine.pi0).dispersion()
        self.engine.step(day)
        self.log.paging[day] = (self.engine.alerts["all"].detector.paging, self._early(day))

    def _early(self, day: int) -> bool:
        ref_end = self.engine.logs["all"].reference_end
        pi0 = self.engine.pi0
        if "all" not in self.engine.references or ref_end is None or pi0 is None:
            return False
        model = self.model(day, pi0)
        if isinstance(model, str):
            return False
        steps: list[WindowIncrement] = []
        for j in range(ref_end + 1, day):
            look = day - (j + 1)
            if look >= HORIZON_DAYS or j in self.engine.logs["all"].judged:
                continue
            steps.append(model.evidence(self.arrivals[j], DAY0 + timedelta(days=j), look).step)
            if look in LOOKS and self.score(j):
                self._score(model, j, look, pi0)
        state = continue_detector(
            self.engine.alerts["all"].detector,
            steps,
            threshold=threshold_for(True, 0),
            was_paging=self._was_paging,
        )
        self._was_paging = state.paging
        return state.paging

    def model(self, day: int, pi0: float) -> SegmentReporting | str:
        """The segment's reporting model at the look ``day``, as app/windows/early.py builds it
        from stored counts (or the oracle's)."""
        reference = self._reference(pi0)
        # As the worker reads them: the windows of the horizon and the development's weeks.
        first = max(0, day - (HORIZON_DAYS + DEVELOPMENT_WINDOWS + 2))
        history = [(self.arrivals[j], day - (j + 1)) for j in range(first, day)]
        design = ReportingDesign(pi0=pi0, drop=DETECTION_DROP, horizon=HORIZON_DAYS, seed=self.seed)
        model = SegmentReporting.build(reference, history, design)
        if isinstance(model, str) or self.oracle_tilt is None:
            return model
        test = replace(model.test, null_tilt=0.0, drop_tilt=self.oracle_tilt)
        return replace(model, test=test, dispersion=1.0, integrate_completeness=False)

    def _reference(self, pi0: float) -> ReferenceBins:
        frozen = self.engine.references["all"]
        first = (frozen.first_window - DAY0).days
        last = (frozen.last_window - DAY0).days
        windows = self.stream.windows
        chosen = [j for j in range(first, last + 1) if windows[j].final.positives > 0]
        frauds = np.stack([_reported_bins(windows[j], self.bins) for j in chosen])
        rows = np.sum([windows[j].rows_per_bin for j in chosen], axis=0).astype(np.float64)
        pooled = frauds.sum(axis=0)
        legit = rows - pooled
        exact = evaluate_sketch(frozen.sketch, pi0=pi0).calibrated["average_precision"]
        binned = float(binned_average_precision(pooled / pooled.sum(), legit / legit.sum(), pi0)[0])
        # The dispersion is read off the reference's windows and the judged windows since that
        # did not page, as the worker does.
        judged = self.engine.logs["all"].judged
        calm = [j for j, (_, paging, _) in sorted(judged.items()) if not paging]
        recent = [_reported_bins(windows[j], self.bins) for j in calm[-DISPERSION_WINDOWS:]]
        return ReferenceBins(
            frauds=pooled,
            legit=legit,
            window_frauds=np.stack([*frauds, *recent]),
            ap_shift=(exact if exact is not None else binned) - binned,
            threshold_bin=self.threshold_bin,
            calm_windows=len(recent),
        )

    def _score(self, model: SegmentReporting, j: int, look: int, pi0: float) -> None:
        window = self.stream.windows[j]
        seed = self.seed * 1000 + j
        measured = _measured(window, look, self.stream.edges)
        estimate = model.estimate(
            self.arrivals[j], window.rows_per_bin, look, seed=seed, measured=measured
        )
        final = window.final
        complete = evaluate_sketch(final, pi0=pi0)
        truths = {
            "pi": final.positives / final.n,
            "precision": complete.regular["precision"],
            "recall": complete.regular["recall"],
            "average_precision": complete.calibrated["average_precision"],
        }
        for metric, truth in truths.items():
            self.log.estimates.append(
                EstimateRecord(
                    j, look, metric, estimate.values[metric], estimate.intervals[metric], truth
                )
            )
        if look == 1:  # the label-free estimate does not change with the look
            self.log.estimates.append(
                EstimateRecord(j, 0, "scores_only_pi", self._scores_only(j), None, truths["pi"])
            )

    def _scores_only(self, j: int) -> float:
        """The fraud rate the scores alone give (app/metrics/nowcast.py), for comparison."""
        frozen = self.engine.references["all"]
        pi0 = self.engine.pi0 or 0.5
        reference = self._reference(pi0)
        classes = ClassHistogram(
            self.stream.edges,
            reference.frauds.astype(np.int64),
            np.round(reference.legit).astype(np.int64),
        )
        window = self.stream.windows[j]
        estimate = nowcast_window(
            window.rows_per_bin, window.flagged, classes, frozen.sketch, seed=j, replicates=50
        )
        return float(estimate.pi)


@dataclass(frozen=True)
class Config:
    """The bench's size: streams per situation, days per drift stream, sizes."""

    streams: int
    days: int
    sizes: tuple[int, ...]
    variants: tuple[str, ...] = tuple(VARIANTS)


def _warmup(size: int) -> int:
    """Windows before a change: the reference's 14 windows and 500 frauds, matured (60 days),
    and the reporting history's four weeks."""
    return max(14, math.ceil(500 / size)) + HORIZON_DAYS + 30


@dataclass(frozen=True)
class Run:
    """How a stream is run: which windows' estimates are scored, and the oracle's tilt (if the
    bound is run instead of calmon's test)."""

    score: Callable[[int], bool] = lambda _: False
    oracle_tilt: float | None = None


def run_stream(days: Sequence[Day], size: int, feed: FeedConfig, seed: int, run: Run) -> StreamLog:
    """One stream through the engine."""
    stream = simulate(days, size, feed, seed)
    return EarlyEngine(stream, seed=seed, score=run.score, oracle_tilt=run.oracle_tilt).run()


def drift_table(config: Config) -> Iterator[str]:
    """False pages on pure prior drift, under every reporting variant."""
    yield "| frauds a window | reporting | streams | judged windows | looks | pages |"
    yield "|---:|---|---:|---:|---:|---:|"
    for size in config.sizes:
        for variant in config.variants:
            feed = VARIANTS[variant]
            judged = looks = pages = 0
            for s in range(config.streams):
                kind = DRIFTS[s % len(DRIFTS)]
                days = prior_drift(kind, config.days, np.random.default_rng([size, s, 7]))
                log = run_stream(days, size, feed, 1000 * size + s, Run())
                judged += log.judged
                looks += len(log.paging)
                pages += log.episodes()
            n = config.streams
            yield f"| {size:,} | {variant} | {n} | {judged:,} | {looks:,} | {pages} |"


@dataclass(frozen=True)
class Delays:
    """Days from the onset to the page over a set of streams."""

    days: list[float]
    early: int
    held: int

    def row(self, streams: int) -> str:
        """Within 3 / 7 days, the median (max), how many rested on early evidence, held."""
        values = np.array(self.days)
        finite = values[np.isfinite(values)]
        summary = f"{np.median(finite):.0f} ({finite.max():.0f})" if finite.size else "-"
        within = f"{int((values <= 3).sum())} / {int((values <= 7).sum())} of {streams}"
        return f"{within} | {summary} | {self.early} | {self.held}"


def _delays(
    scenario: str, size: int, variant: str, streams: int, *, oracle: bool = False
) -> Delays:
    change = _warmup(size)
    days, early, held = [], 0, 0
    tilt = mu_for(0.6) - HEALTHY_MU if oracle else None  # the Gaussian's shift is its tilt
    for s in range(streams):
        stream = degradation(scenario, change, change + 30)
        log = run_stream(stream, size, VARIANTS[variant], 5000 * size + s, Run(oracle_tilt=tilt))
        first = log.first_page(change + 1)
        if first is None:
            days.append(math.inf)
            continue
        days.append(first[0] - change)
        early += first[1]
        held += all(j or e for d, (j, e) in log.paging.items() if d >= first[0])
    return Delays(days, early, held)


def drops_table(config: Config) -> Iterator[str]:
    """Days from the onset to the page, on degradation streams, beside the bound."""
    yield (
        "| frauds a window | scenario | reporting | detector | paged within 3 / 7 days "
        "| median (max) days | on early evidence | held on |"
    )
    yield "|---:|---|---|---|---:|---|---:|---:|"
    for size in config.sizes:
        for scenario, variant in (("step", "base"), ("masked", "base"), ("step", "bursts")):
            for oracle in (False, True):
                if oracle and variant != "base":
                    continue
                delays = _delays(scenario, size, variant, config.streams, oracle=oracle)
                who = "best possible" if oracle else "calmon"
                yield (
                    f"| {size:,} | {scenario} | {variant} | {who} | {delays.row(config.streams)} |"
                )


def estimates_table(config: Config) -> Iterator[str]:
    """Error and coverage of the early estimates by look."""
    yield (
        "| frauds a window | windows | look (days) | estimate | mean abs. error "
        "| mean rel. error | 95% interval covers |"
    )
    yield "|---:|---|---:|---|---:|---:|---:|"
    for size in config.sizes:
        change = _warmup(size)
        for variant in ("base", "faster", "slower", "bursts"):
            healthy: list[EstimateRecord] = []
            for s in range(config.streams):
                rng = np.random.default_rng([size, s, 3])
                drift = prior_drift("day_to_day", change + 40, rng)
                healthy += run_stream(
                    drift, size, VARIANTS[variant], 9000 * size + s, Run(score=_from(change))
                ).estimates
            yield from _estimate_rows(size, f"healthy, pi 20x, {variant}", healthy)
        after: list[EstimateRecord] = []
        for s in range(config.streams):
            step = degradation("step", change, change + 20)
            after += run_stream(
                step, size, VARIANTS["base"], 7000 * size + s, Run(score=_week(change))
            ).estimates
        yield from _estimate_rows(size, "week after a drop, base", after)


def _from(first: int) -> Callable[[int], bool]:
    return lambda j: j >= first


def _week(first: int) -> Callable[[int], bool]:
    return lambda j: first <= j < first + 7


def _estimate_rows(size: int, label: str, records: list[EstimateRecord]) -> Iterator[str]:
    metrics = ("pi", "precision", "recall", "average_precision")
    for look, metric in [(0, "scores_only_pi")] + [(k, m) for k in LOOKS for m in metrics]:
        chosen = [
            (r.value, r.truth, r.interval)
            for r in records
            if r.look == look and r.metric == metric and r.value is not None and r.truth
        ]
        if not chosen:
            continue
        error = np.array([abs(v - t) for v, t, _ in chosen])
        relative = np.array([abs(v - t) / abs(t) for v, t, _ in chosen])
        intervals = [(t, i) for _, t, i in chosen if i is not None]
        covered = f"{np.mean([i[0] <= t <= i[1] for t, i in intervals]):.1%}" if intervals else "-"
        name = "pi, from scores alone" if look == 0 else metric
        when = "-" if look == 0 else str(look)
        yield (
            f"| {size:,} | {label} | {when} | {name} | {error.mean():.4f} "
            f"| {relative.mean():.1%} | {covered} |"
        )


SECTIONS: dict[str, Callable[[Config], Iterator[str]]] = {
    "drift": drift_table,
    "drops": drops_table,
    "estimates": estimates_table,
}


def main(argv: list[str] | None = None) -> int:
    """Print the chosen sections' tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of every section")
    parser.add_argument("--streams", type=int, default=30)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 100, 1000])
    parser.add_argument("--sections", nargs="+", choices=sorted(SECTIONS), default=list(SECTIONS))
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        help="the reporting variants of the drift section",
    )
    args = parser.parse_args(argv)
    config = Config(args.streams, args.days, tuple(args.sizes), tuple(args.variants))
    if args.quick:
        config = Config(2, 150, (100,))
    for name in args.sections:
        started = time.perf_counter()
        print(f"\n## {name}\n")
        for line in SECTIONS[name](config):
            print(line, flush=True)
        print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
