"""The drop detector against simulated streams: false pages, detection delay, late labels.

    python -m bench.detection                     # every table (about 20 minutes)
    python -m bench.detection --seeds 10          # the README's false-page bound (an hour)
    python -m bench.detection --sections late     # one table
    python -m bench.detection --quick             # a smoke run of every section

Streams follow Siblini et al.'s Gaussian setup (bench/simulation.py): a window of P positives
and N negatives is drawn exactly as its curve sketch. The engine below runs calmon's own domain
code (app/monitoring, app/metrics), the same functions the worker calls between its reads and
writes: the historical pi0 policy with its versions, maturity, the automatic reference (14
windows and 500 positives by default), the detector and the verdicts, with the model settings'
defaults. Sizes are the mean positives per window (10, 25, 100, 1,000).

Scenarios:

* prior drift, the model unchanged (365 judged windows per stream): ``day_to_day`` (pi
  log-uniform over a 20x range, 0.001 to 0.02, independently each day), ``weekly`` (pi and
  volume cycle weekly, pi over a 16x range), ``attacks`` (a base rate with 8x fraud bursts of 3
  to 5 days about every 40 days), ``trend`` (pi grows 20x over the year); and ``steady`` (no
  change at all). Any page is false.
* degradation, pi steady at 0.005: ``step`` (calibrated AP -40% from one window on),
  ``step_drift`` (the same step while pi moves 20x day to day), ``ramp`` (a linear ramp to -60%
  over 30 windows), ``lasting`` (-40% for 60 windows, then back: is the page on for all of
  them, and how soon does it clear), ``masked`` (-40% while pi doubles, which holds the
  measured AP about still), ``late_labels`` (the step, with fraud
  labels arriving 7 to 28 days late and legitimate ones confirmed 45 days late: windows are
  judged day by day as their labels mature), ``segment`` (10 segments of the given size, one
  degrades by -40%: the other nine must stay quiet; named segments page at threshold + ln 10).

Beside calmon, the same windows are judged the way NannyML judges realized performance: a
window alerts when its (measured) AP falls below the reference windows' mean minus three
standard deviations.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from scipy.special import ndtr
from scipy.stats import chi2

from app.metrics import CurveSketch, evaluate_sketch, pool_sketches
from app.metrics.mixture import histogram
from app.metrics.types import Float64Array, Int64Array
from app.monitoring.alerts import (
    PRIMARY_METRIC,
    FrozenReference,
    ReferenceAtPi0,
    SegmentAlert,
    Tuning,
    WindowToJudge,
    judge_window,
)
from app.monitoring.detector import threshold_for
from app.monitoring.early import DISPERSION_WINDOWS, ReferenceBins
from app.monitoring.maturity import MaturityRule
from app.monitoring.pi0 import Pi0Policy, WindowLabels, estimate_pi0, needs_new_version
from app.monitoring.reference import ReferenceRule, ReferenceSpec, choose_reference
from bench.simulation import (
    EDGE_ROWS,
    HEALTHY_MU,
    THRESHOLD,
    gaussian_sketch,
    healthy_edges,
    mu_for,
    sketch_with,
)

DAY0 = datetime(2026, 1, 1, tzinfo=UTC)
MATURITY = MaturityRule(min_label_coverage=0.8)
RULE = ReferenceRule(windows=14, min_positives=500, maturity=MATURITY)
DETECTION_DROP = 0.3
PI0_TOLERANCE = 0.1
FLAT_PI = 0.005
NANNYML_SIGMAS = 3.0


# --- the engine: calmon's domain code, one model ---------------------------------------------


@dataclass
class SegmentLog:
    """What happened to one segment: per judged window, the day and the verdict."""

    reference_end: int | None = None
    judged: dict[int, tuple[int, bool, str]] = field(default_factory=dict)
    """window index -> (day judged, paging after it, verdict)."""
    nannyml: dict[int, bool] = field(default_factory=dict)
    """window index -> alert by the reference mean - 3 sd rule."""

    def paging(self) -> list[tuple[int, bool]]:
        """(window, paging) in the order the windows were judged."""
        return [(w, p) for w, (_, p, _) in sorted(self.judged.items(), key=lambda i: i[1][0])]


class Engine:
    """Feeds windows' labelled rows (as sketches) to the domain rules, day by day."""

    def __init__(
        self, segments: Sequence[str], *, seed: int, maturity: MaturityRule = MATURITY
    ) -> None:
        self.segments = list(segments)
        self.seed = seed
        self.maturity = maturity
        """How windows mature: label coverage here; a label horizon on the clock (the caller
        moves it) in bench/early_pages.py."""
        self.dispersion: float | None = None
        """The windows' dispersion (frauds in bursts) if the caller sets it (bench/early_pages.py
        reads it off its reported frauds); None: read off the windows' fraud scores here, as
        the worker does (:meth:`_dispersion`)."""
        self._edges = healthy_edges(np.random.default_rng([seed, EDGE_ROWS]), FLAT_PI)
        self._reference_windows: dict[str, list[int]] = {}
        self.sketches: dict[tuple[int, str], CurveSketch | None] = {}
        self.counts: dict[tuple[int, str], WindowLabels] = {}
        self.pi0: float | None = None
        self.references: dict[str, FrozenReference] = {}
        self._at_pi0: dict[tuple[str, float], ReferenceAtPi0] = {}
        self.alerts = {s: SegmentAlert.fresh(s, 1, "") for s in self.segments}
        self.logs = {s: SegmentLog() for s in self.segments}
        self._nannyml: dict[str, tuple[float, float]] = {}

    def observe(self, window: int, segment: str, labelled: CurveSketch | None, rows: int) -> None:
        """A window's labelled rows so far (None: none yet; re-observed as labels arrive)."""
        self.sketches[(window, segment)] = labelled
        n, positives = (labelled.n, labelled.positives) if labelled is not None else (0, 0)
        start = DAY0 + timedelta(window)
        self.counts[(window, segment)] = WindowLabels(start, n, positives, n / rows)

    def step(self, day: int) -> None:
        """What the worker does after storing windows: pi0, references, judgements."""
        windows = sorted({w for w, _ in self.sketches})
        history = [self.counts[(w, "all")] for w in windows]
        policy = Pi0Policy("historical", mature=self.maturity.is_mature)
        estimate = estimate_pi0(policy, history).value
        if needs_new_version(self.pi0, estimate, PI0_TOLERANCE):
            self.pi0 = estimate
        if self.pi0 is None:
            return
        for segment in self.segments:
            if segment not in self.references:
                self._freeze(segment, windows)
        named = sum(1 for s in self.references if s != "all")
        for segment in self.segments:
            if segment in self.references:
                self._judge(segment, windows, day, threshold_for(segment == "all", named))

    def _freeze(self, segment: str, windows: Sequence[int]) -> None:
        history = [self.counts[(w, segment)] for w in windows if (w, segment) in self.counts]
        rule = ReferenceRule(RULE.windows, RULE.min_positives, self.maturity)
        choice = choose_reference(ReferenceSpec(1, "automatic"), rule, history)
        if not choice.ready:
            return
        chosen = [(w.window_start - DAY0).days for w in choice.windows]
        self.references[segment] = FrozenReference(
            version=1,
            first_window=choice.windows[0].window_start,
            last_window=choice.windows[-1].window_start,
            windows=len(chosen),
            labelled=sum(w.labelled for w in choice.windows),
            positives=choice.positives,
            sketch=pool_sketches([self._sketch(w, segment) for w in chosen]),
        )
        self.logs[segment].reference_end = chosen[-1]
        self._reference_windows[segment] = chosen
        # NannyML's thresholds come from the same reference windows' measured AP.
        values = [self._ap(w, segment, None) for w in chosen]
        defined = [v for v in values if v is not None]
        self._nannyml[segment] = (float(np.mean(defined)), float(np.std(defined)))

    def _dispersion(self, segment: str) -> float:
        """The segment's dispersion as the worker reads it (app/windows/early.py): the fraud
        scores per bin of the reference's windows and of the newest judged windows that did not
        page. The legitimate rows per bin, which only place the binormal axis, are the
        reference's expected N(0, 1) counts (hundreds of thousands of rows: their sampling
        error is far below a bin's width)."""
        judged = self.logs[segment].judged
        calm = [w for w, (_, paging, _) in sorted(judged.items()) if not paging]
        chosen = self._reference_windows[segment]
        frauds = np.stack(
            [self._fraud_bins(w, segment) for w in [*chosen, *calm[-DISPERSION_WINDOWS:]]]
        )
        pooled = frauds[: len(chosen)].sum(axis=0)
        negatives = sum(self._sketch(w, segment).negatives for w in chosen)
        cdf = ndtr(np.concatenate([[-np.inf], self._edges, [np.inf]]))
        bins = ReferenceBins(
            frauds=pooled,
            legit=negatives * np.diff(cdf),
            window_frauds=frauds,
            ap_shift=0.0,
            threshold_bin=int(np.searchsorted(self._edges, THRESHOLD, side="right")),
        )
        return bins.dispersion()

    def _fraud_bins(self, window: int, segment: str) -> Float64Array:
        sketch = self._sketch(window, segment)
        scores = np.repeat(sketch.scores, sketch.positives_at)
        return histogram(scores, self._edges).astype(np.float64)

    def _seeds(self, window: int, segment: str) -> int:
        """The detector's draws for a window: fixed by (stream, window, segment)."""
        key = [self.seed, window, self.segments.index(segment)]
        return int(np.random.SeedSequence(key).generate_state(1)[0])

    def _sketch(self, window: int, segment: str) -> CurveSketch:
        sketch = self.sketches[(window, segment)]
        assert sketch is not None  # a usable window has labelled rows
        return sketch

    def _ap(self, window: int, segment: str, pi0: float | None) -> float | None:
        sketch = self.sketches[(window, segment)]
        if sketch is None or sketch.positives == 0 or sketch.negatives == 0:
            return None
        result = evaluate_sketch(sketch, pi0=pi0 if pi0 is not None else 0.5)
        return (result.calibrated if pi0 is not None else result.regular)[PRIMARY_METRIC]

    def _judge(self, segment: str, windows: Sequence[int], day: int, threshold: float) -> None:
        assert self.pi0 is not None
        cached = (segment, self.pi0)
        if cached not in self._at_pi0:  # as the worker does once per pass: not once per window
            self._at_pi0[cached] = ReferenceAtPi0(self.references[segment], self.pi0)
        reference = self._at_pi0[cached]
        log = self.logs[segment]
        assert log.reference_end is not None
        dispersion = self.dispersion if self.dispersion is not None else self._dispersion(segment)
        for window in windows:
            key = (window, segment)
            if window <= log.reference_end or window in log.judged or key not in self.counts:
                continue
            counts = self.counts[key]
            if not self.maturity.is_mature(counts):
                continue
            result = evaluate_sketch(self._sketch(window, segment), pi0=self.pi0)
            tuning = Tuning(threshold, DETECTION_DROP, None, dispersion)
            self.alerts[segment], outcome = judge_window(
                self.alerts[segment],
                WindowToJudge(
                    labels=counts,
                    regular=result.regular,
                    calibrated=result.calibrated,
                    calibrated_ci_high=None,
                    seed=self._seeds(window, segment),
                ),
                reference,
                tuning,
            )
            paging = bool(outcome.judgement.signals)
            log.judged[window] = (day, paging, outcome.judgement.verdict)
            mean, sd = self._nannyml[segment]
            measured = result.regular[PRIMARY_METRIC]
            log.nannyml[window] = measured is not None and measured < mean - NANNYML_SIGMAS * sd


# --- streams -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Day:
    """One window: its fraud rate, volume multiplier and the positives' mean per segment."""

    pi: float
    volume: float
    mu: dict[str, float]


def prior_drift(kind: str, windows: int, rng: np.random.Generator) -> list[Day]:
    """The model unchanged; only the fraud rate (and volume) move."""
    days = []
    attack_until = -1
    for t in range(windows):
        volume = 1.0
        if kind == "day_to_day":
            pi = float(np.exp(rng.uniform(np.log(0.001), np.log(0.02))))
        elif kind == "weekly":
            phase = math.sin(2 * math.pi * t / 7)
            pi = 0.005 * 4.0**phase  # 0.00125 .. 0.02
            volume = 1.0 - 0.3 * max(phase, 0.0)
        elif kind == "attacks":
            if t > attack_until and rng.random() < 1 / 40:
                attack_until = t + int(rng.integers(3, 6))
            pi = 0.003 * (8.0 if t <= attack_until else 1.0) * float(np.exp(rng.normal(0, 0.2)))
        elif kind == "trend":
            pi = 0.001 * 20.0 ** (t / max(windows - 1, 1))
        elif kind == "steady":
            pi = FLAT_PI
        else:
            raise ValueError(kind)
        days.append(Day(pi, volume, {"all": HEALTHY_MU}))
    return days


def degradation(
    kind: str, change: int, windows: int, rng: np.random.Generator | None = None
) -> list[Day]:
    """pi steady (doubling at the change for ``masked``, log-uniform over 20x each day for
    ``step_drift``); the model degrades at ``change``."""
    step, days = mu_for(0.6), []
    for t in range(windows):
        after = t - change
        pi = FLAT_PI * (2.0 if kind == "masked" and after >= 0 else 1.0)
        if kind == "step_drift":
            assert rng is not None
            pi = float(np.exp(rng.uniform(np.log(0.001), np.log(0.02))))
        if after < 0:
            mu = HEALTHY_MU
        elif kind == "ramp":
            mu = mu_for(1.0 - 0.6 * min(after + 1, 30) / 30)
        elif kind == "lasting":
            mu = step if after < 60 else HEALTHY_MU
        else:
            mu = step
        days.append(Day(pi, 1.0, {"all": mu}))
    return days


def mean_pi(days: Sequence[Day]) -> float:
    """Volume-weighted mean fraud rate of a stream (sets the rows per window for a size)."""
    return sum(d.pi * d.volume for d in days) / sum(d.volume for d in days)


def run_stream(days: Sequence[Day], size: int, seed: int) -> SegmentLog:
    """One model, segment ``all``, labels complete at once."""
    rng = np.random.default_rng(seed)
    rows = size / mean_pi(days)
    engine = Engine(["all"], seed=seed)
    for t, day in enumerate(days):
        n = int(rows * day.volume)
        positives = int(rng.binomial(n, day.pi))
        engine.observe(t, "all", gaussian_sketch(rng, positives, n - positives, day.mu["all"]), n)
        engine.step(t)
    return engine.logs["all"]


def run_late_labels(days: Sequence[Day], size: int, seed: int) -> tuple[SegmentLog, list[int]]:
    """Labels trickle in: a fraud's after 7 to 28 days, a legitimate row's after 45. Returns
    the log and each window's maturity day."""
    rng = np.random.default_rng(seed)
    rows = size / mean_pi(days)
    engine = Engine(["all"], seed=seed)
    drawn: list[tuple[Float64Array, Int64Array, int]] = []
    matured: list[int] = [-1] * len(days)
    for today in range(len(days) + 46):
        if today < len(days):
            n = int(rows * days[today].volume)
            positives = int(rng.binomial(n, days[today].pi))
            scores = rng.normal(days[today].mu["all"], 1.0, positives)
            drawn.append((scores, today + rng.integers(7, 29, positives), n))
        for t, (scores, arrival, n) in enumerate(drawn):
            if matured[t] >= 0:
                continue
            frauds = scores[arrival <= today]
            # Legitimate rows are all confirmed on day 45; their scores are drawn once, from a
            # generator of the window's own, as the window's rows do not change.
            negatives = n - scores.size if today >= t + 45 else 0
            labelled = (
                sketch_with(np.random.default_rng([seed, t]), frauds, negatives)
                if frauds.size or negatives
                else None
            )
            engine.observe(t, "all", labelled, n)
            if MATURITY.is_mature(engine.counts[(t, "all")]):
                matured[t] = today
        engine.step(today)
    return engine.logs["all"], matured


def run_segments(size: int, seed: int, change: int, windows: int) -> dict[str, SegmentLog]:
    """Ten segments of ``size`` positives a window; s0 degrades by -40% at ``change``."""
    rng = np.random.default_rng(seed)
    names = [f"s{i}" for i in range(10)]
    engine = Engine(["all", *names], seed=seed)
    step = mu_for(0.6)
    n = int(size / FLAT_PI)
    for t in range(windows):
        parts = []
        for name in names:
            mu = step if name == "s0" and t >= change else HEALTHY_MU
            positives = int(rng.binomial(n, FLAT_PI))
            sketch = gaussian_sketch(rng, positives, n - positives, mu)
            engine.observe(t, name, sketch, n)
            parts.append(sketch)
        engine.observe(t, "all", pool_sketches(parts), n * len(names))
        engine.step(t)
    return engine.logs


# --- measurements ------------------------------------------------------------------------------


def episodes(log: SegmentLog) -> int:
    """Pages raised (transitions into paging)."""
    seen, count = False, 0
    for _, paging in log.paging():
        count += paging and not seen
        seen = paging
    return count


def first_page(log: SegmentLog, after: int) -> int | None:
    """The first window at or after ``after`` whose judgement paged."""
    pages = [w for w, (_, p, _) in log.judged.items() if p and w >= after]
    return min(pages) if pages else None


def upper_95(events: int, trials: int) -> float:
    """Exact (Garwood) 95% upper bound of a Poisson rate."""
    return float(chi2.ppf(0.975, 2 * (events + 1)) / 2 / trials) if trials else math.nan


@dataclass(frozen=True)
class Config:
    """How much to simulate: ``seeds`` streams per prior-drift scenario and size, ``trials`` per
    degradation scenario and size (delays vary more from stream to stream than false pages
    need)."""

    sizes: tuple[int, ...]
    seeds: int
    windows: int
    trials: int = 20
    drift_kinds: tuple[str, ...] = ("day_to_day", "weekly", "attacks", "trend")
    sections: tuple[str, ...] = ("drift", "degradation", "late", "segments")


def _warmup(size: int) -> int:
    """Windows the automatic reference needs at this size (14, or 500 positives)."""
    return max(RULE.windows, math.ceil(RULE.min_positives / size)) + 4


def prior_drift_table(config: Config) -> Iterator[str]:
    """False pages under pure prior drift (and with no change at all), calmon vs NannyML."""
    yield (
        "| positives a window | judged windows | calmon pages | rate (95% upper) "
        "| NannyML alerts | no change at all: calmon pages / NannyML alerts (windows) |"
    )
    yield "|---:|---:|---:|---|---:|---|"
    for size in config.sizes:
        judged = pages = nanny = 0
        for kind in config.drift_kinds:
            log_pages, log_judged, log_nanny = _stationary(kind, size, config)
            judged, pages, nanny = judged + log_judged, pages + log_pages, nanny + log_nanny
        steady_pages, steady_judged, steady_nanny = _stationary("steady", size, config)
        rate = f"{pages / judged:.1e} (< {upper_95(pages, judged):.1e})"
        yield (
            f"| {size:,} | {judged:,} | {pages} | {rate} | {nanny} ({nanny / judged:.2%}) "
            f"| {steady_pages} / {steady_nanny} ({steady_judged:,}) |"
        )


def _stationary(kind: str, size: int, config: Config) -> tuple[int, int, int]:
    """(calmon pages, judged windows, NannyML alerts) over the seeds of one unchanged model."""
    judged = pages = nanny = 0
    for seed in range(config.seeds):
        rng = np.random.default_rng([size, seed, sum(map(ord, kind))])
        log = run_stream(prior_drift(kind, config.windows + _warmup(size), rng), size, seed)
        judged += len(log.judged)
        pages += episodes(log)
        nanny += sum(log.nannyml.values())
    return pages, judged, nanny


def degradation_table(config: Config) -> Iterator[str]:
    """Detection delay (windows after the change), calmon and NannyML on the same windows."""
    yield (
        "| positives a window | step -40%: calmon | NannyML | step -40% under 20x prior drift: "
        "calmon | NannyML | ramp to -60%, deficit at the page: calmon | NannyML | masked "
        "step: calmon | 60-window drop: on until it ends / cleared after |"
    )
    yield "|---:|---|---|---|---|---|---|---|---|"
    for size in config.sizes:
        cells = []
        change = _warmup(size) + 10
        horizon = change + 90
        for kind in ("step", "step_drift", "ramp", "masked"):
            delays, nanny = [], []
            for seed in range(config.trials):
                rng = np.random.default_rng([size, seed, 7])
                log = run_stream(degradation(kind, change, horizon, rng), size, 1000 + seed)
                page = first_page(log, change)
                delays.append(math.inf if page is None else page - change)
                alerts = [w for w, a in log.nannyml.items() if a and w >= change]
                nanny.append(math.inf if not alerts else min(alerts) - change)
            if kind == "ramp":
                cells += [_deficits(delays), _deficits(nanny)]
            elif kind == "masked":
                cells.append(_delays(delays))
            else:
                cells += [_delays(delays), _delays(nanny)]
        cells.append(_lasting(size, change, config.trials))
        yield f"| {size:,} | " + " | ".join(cells) + " |"


def _lasting(size: int, change: int, seeds: int) -> str:
    """A -40% drop for 60 windows, then healthy again: once paged, is the page on for every
    remaining window of the drop, and how many healthy windows does it take to clear?"""
    held, paged, clears = 0, 0, []
    for seed in range(seeds):
        log = run_stream(degradation("lasting", change, change + 100), size, 2000 + seed)
        page = first_page(log, change)
        if page is None or page >= change + 60:
            continue
        paged += 1
        states = dict(log.paging())
        held += all(states.get(w, False) for w in range(page, change + 60))
        back = [w for w in range(change + 60, change + 100) if not states.get(w, True)]
        clears.append(back[0] - (change + 60) + 1 if back else math.inf)
    if not paged:
        return "not paged within the 60 windows"
    return f"{held} of {paged} paged streams / {_delays(clears)}"


def _delays(values: Sequence[float]) -> str:
    """Median (max) of the delays, and how many streams were never paged."""
    finite = [v for v in values if math.isfinite(v)]
    missed = len(values) - len(finite)
    if not finite:
        return "not paged"
    if 2 * missed >= len(values):
        return f"{missed} of {len(values)} missed (the others: up to {max(finite):.0f})"
    text = f"{np.median(values):.0f} ({max(finite):.0f})"
    return text + (f", {missed} of {len(values)} missed" if missed else "")


def _deficits(delays: Sequence[float]) -> str:
    def deficit(d: float) -> float:
        return 60.0 * min(d + 1, 30) / 30

    finite = [d for d in delays if math.isfinite(d)]
    if not finite:
        return "not paged"
    median = deficit(float(np.median(delays)))
    return f"{median:.0f}% ({deficit(max(finite)):.0f}%)"


def late_labels_table(config: Config) -> Iterator[str]:
    """The step drop with labels arriving late: judged only once mature, paged soon after."""
    yield (
        "| positives a window | windows judged before maturity | days from the first degraded "
        "window's maturity to the page, median (max) |"
    )
    yield "|---:|---:|---|"
    for size in config.sizes:
        change = _warmup(size) + 10
        early, delays = 0, []
        for seed in range(config.trials):
            log, matured = run_late_labels(degradation("step", change, change + 40), size, seed)
            early += sum(1 for w, (day, _, _) in log.judged.items() if day < matured[w])
            page = first_page(log, change)
            delays.append(math.inf if page is None else log.judged[page][0] - matured[change])
        yield f"| {size:,} | {early} | {_delays(delays)} |"


def segments_table(config: Config) -> Iterator[str]:
    """One degraded segment among ten: paged; the nine others never."""
    yield (
        "| positives a window and segment | degraded segment: delay median (max) | pages on the "
        "9 healthy segments (judged windows) | segment all |"
    )
    yield "|---:|---|---|---|"
    for size in config.sizes:
        change = _warmup(size) + 10
        delays, healthy, judged, whole = [], 0, 0, []
        for seed in range(config.trials):
            logs = run_segments(size, 3000 + seed, change, change + 60)
            page = first_page(logs["s0"], change)
            delays.append(math.inf if page is None else page - change)
            for name in (f"s{i}" for i in range(1, 10)):
                healthy += episodes(logs[name])
                judged += len(logs[name].judged)
            whole.append(first_page(logs["all"], change))
        paged_all = sum(p is not None for p in whole)
        yield (
            f"| {size:,} | {_delays(delays)} | {healthy} ({judged:,}) | "
            f"paged in {paged_all} of {len(whole)} |"
        )


def run(config: Config, out: Callable[[str], None] = print) -> None:
    """Every table, printed as markdown."""
    sections = {
        "drift": ("Pure prior drift (false pages)", prior_drift_table),
        "degradation": ("Degradation (windows after the change)", degradation_table),
        "late": ("Late labels", late_labels_table),
        "segments": ("One degraded segment among ten", segments_table),
    }
    for title, table in (sections[name] for name in config.sections):
        started = time.perf_counter()
        out(f"\n### {title}\n")
        for line in table(config):
            out(line)
        out(f"\n({time.perf_counter() - started:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,25,100,1000", help="positives per window")
    parser.add_argument("--seeds", type=int, default=3, help="streams per prior-drift scenario")
    parser.add_argument("--trials", type=int, default=20, help="streams per degradation")
    parser.add_argument("--windows", type=int, default=365, help="judged windows per drift stream")
    parser.add_argument("--sections", default="drift,degradation,late,segments")
    parser.add_argument("--quick", action="store_true", help="a smoke run of every section")
    args = parser.parse_args(argv)
    sections = tuple(args.sections.split(","))
    if args.quick:
        config = Config(sizes=(25, 100), seeds=1, windows=60, trials=1, drift_kinds=("day_to_day",))
    else:
        sizes = tuple(int(s) for s in args.sizes.split(","))
        config = Config(sizes, args.seeds, args.windows, args.trials, sections=sections)
    run(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
