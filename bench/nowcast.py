"""The nowcast against simulated windows: fraud rate and expected metrics from scores alone.

    python -m bench.nowcast                  # every table (about 7 minutes)
    python -m bench.nowcast --quick          # a smoke run of every table
    python -m bench.nowcast --bursts-only    # table 6 alone: bursty healthy streams
    python -m bench.nowcast --nannyml-python /work/nannyml-venv/bin/python   # with CBPE

The CBPE peer needs its own virtualenv (``python3 -m venv /work/nannyml-venv &&
/work/nannyml-venv/bin/pip install nannyml statsmodels``; or set CALMON_NANNYML_PYTHON); the
quantile sketches need ``pip install datasketches`` (bench-only; skipped with a note if
missing). The tables go to stdout (keep a run in bench/results/, which git ignores).

Streams follow Siblini et al.'s Gaussian setup (bench/simulation.py): legitimate scores N(0, 1),
fraud scores N(2.5, 1), threshold 2.0. Each stream has its own reference: 14 labelled windows of
20,000 rows at pi = 0.005, the bins cut from the first window's scores (``bin_edges``), the class
counts pooled, the curve sketch built from all its labelled rows. Then windows of 20,000 rows
with pure prior drift (pi log-uniform from 0.001 to 0.02, drawn independently per window),
scores only. Every window is drawn from its own seeded generator, so a window is the same in
every table and in the file handed to the peer.

Tables:

1. accuracy of the nowcast (``nowcast_window``, 400 replicates) against what each window
   realised: pi (maximum likelihood and the adjusted classify-and-count), precision and F1 at
   the threshold, average precision (regular AP of the window's labelled rows, calmon's
   ``evaluate_sketch``, which is scikit-learn's step sum);
2. the score-shift warning under pure prior drift, a lasting shift of the legitimate scores
   and of the fraud scores (from the first window after the reference on), and what the
   estimates do then. The rule is the worker's (``app.monitoring.nowcast.shift_reason``): a
   misfit test's p-value under ``MISFIT_P_VALUE`` on the window alone, or on its counts added
   to those of up to six windows before it (``pooled_fit``);
3. which summary of a window's scores: calmon's bins, exact scores with the true densities (the
   oracle: no summary of the scores can do better), Apache DataSketches' KLL and REQ quantile
   sketches read on calmon's bins, a fixed 100-bin equal-width histogram;
4. NannyML's CBPE on the same windows (a peer run in its own virtualenv by
   bench/peers/cbpe_nannyml.py, never a dependency of calmon). CBPE was given, per row, the
   probability ``P(fraud | score)`` that is exactly calibrated on the reference: the Bayes
   posterior of the two Gaussians at the reference's pi = 0.005,
   ``1 / (1 + exp(-(2.5 score - 3.125 + log(0.005 / 0.995))))``; ``y_pred = score >= 2.0``; the
   reference's 14 windows (labelled) to fit on, chunked one chunk per window (a day's timestamp
   per window, ``chunk_period="D"``), CBPE's defaults otherwise (it decides itself whether to
   fit its isotonic calibrator on the reference). CBPE assumes P(y | score) stays as on the
   reference, which a prior shift breaks;
5. cost: counting a window into bins against building its curve sketch, the nowcast's time,
   the stored bytes;
6. the score-shift warning on healthy streams whose frauds come in bursts (bench/label_feeds.py's
   feeds on bench/detection.py's prior-drift scenarios; bench/nowcast_bursts.py), with
   independent rows assumed and with the reference's fraud dispersion divided out. Tables 1 and
   2 divide out each reference's dispersion too (about 1 there: the rows are independent), and
   table 2 shows the rule with independent rows assumed beside it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import beta

from app.metrics import (
    ClassHistogram,
    CurveSketch,
    Nowcast,
    ScoreHistogram,
    bin_edges,
    build_sketch,
    evaluate_sketch,
    nowcast_window,
    pooled_fit,
)
from app.metrics.burst_dispersion import NO_DISPERSION, Dispersion
from app.metrics.misfit import reference_dispersion
from app.metrics.mixture import fit_prior, histogram
from app.metrics.types import BoolArray, Float64Array, Int64Array, Interval
from app.monitoring.nowcast import (
    MISFIT_P_VALUE,
    RECENT_WINDOWS,
    RecentFit,
    fit_p_value,
    shift_reason,
)
from bench.simulation import HEALTHY_MU, THRESHOLD

ROWS = 20_000
REFERENCE_WINDOWS = 14
REFERENCE_PI = 0.005
PI_RANGE = (0.001, 0.02)
LEGIT_MU = 0.0
LEGIT_SHIFTED = 0.3
FRAUD_SHIFTED = 1.5
LEVEL = 0.95
COVERAGE_TARGET = (0.90, 0.99)
ERROR_TARGET = 0.02
MISFIT_TARGET = 0.01
PI_BINS = ((0.0, 0.003), (0.003, 0.008), (0.008, 1.0))
"""Realised fraud rates the CBPE comparison is broken down by."""
METRICS = ("precision", "f1", "average_precision")
PEER = Path(__file__).parent / "peers" / "cbpe_nannyml.py"


# --- windows -----------------------------------------------------------------------------------


def generator(*key: int) -> np.random.Generator:
    """A window's own generator: (seed, stream, scenario, window)."""
    return np.random.default_rng(list(key))


def draw(
    rng: np.random.Generator,
    rows: int,
    pi: float,
    *,
    legit_mu: float = LEGIT_MU,
    fraud_mu: float = HEALTHY_MU,
) -> tuple[Float64Array, BoolArray]:
    """``rows`` scores, each a fraud with probability ``pi``, and their labels."""
    labels: BoolArray = rng.random(rows) < pi
    scores: Float64Array = rng.standard_normal(rows) + np.where(labels, fraud_mu, legit_mu)
    return scores, labels


def drifting_pi(rng: np.random.Generator) -> float:
    """A fraud rate log-uniform over the 20x range."""
    low, high = PI_RANGE
    return float(np.exp(rng.uniform(math.log(low), math.log(high))))


def posterior(scores: Float64Array) -> Float64Array:
    """P(fraud | score) at the reference's pi: what CBPE is given (calibrated on the
    reference, by construction)."""
    llr = HEALTHY_MU * scores - HEALTHY_MU**2 / 2.0
    prior = math.log(REFERENCE_PI / (1.0 - REFERENCE_PI))
    p: Float64Array = 1.0 / (1.0 + np.exp(-(llr + prior)))
    return p


@dataclass(frozen=True)
class Reference:
    """One stream's reference: bins, class counts and curve sketch from its labelled rows, and
    the same rows on a fixed 100-bin equal-width histogram (for the summary comparison)."""

    edges: Float64Array
    classes: ClassHistogram
    sketch: CurveSketch
    wide_edges: Float64Array
    wide_classes: ClassHistogram
    dispersion: Dispersion
    """Its frauds' dispersion, from its windows (about 1 here: the rows are independent)."""


def reference_rows(seed: int, stream: int) -> list[tuple[Float64Array, BoolArray]]:
    """The 14 labelled windows of a stream's reference."""
    return [
        draw(generator(seed, stream, 0, w), ROWS, REFERENCE_PI) for w in range(REFERENCE_WINDOWS)
    ]


def build_reference(windows: Sequence[tuple[Float64Array, BoolArray]]) -> Reference:
    """Bins from the first window's scores, as the worker cuts them; everything else pooled."""
    edges = bin_edges(windows[0][0], THRESHOLD)
    scores = np.concatenate([s for s, _ in windows])
    labels = np.concatenate([y for _, y in windows])
    none = np.empty(0)
    # A fixed histogram's range is set once too: the first window's extremes, 100 equal bins.
    first = windows[0][0]
    wide = np.linspace(first.min(), first.max(), 99)
    parts = [ScoreHistogram.of(edges, s, y, none) for s, y in windows]
    return Reference(
        edges=edges,
        classes=ScoreHistogram.pooled(parts).classes(edges),
        sketch=build_sketch(scores, labels, threshold=THRESHOLD),
        wide_edges=wide,
        wide_classes=ScoreHistogram.of(wide, scores, labels, none).classes(wide),
        dispersion=reference_dispersion(parts, edges),
    )


@dataclass(frozen=True)
class Window:
    """One window's nowcast beside what it realised."""

    stream: int
    position: int
    """Its place among its stream's windows after the reference (0: the first)."""
    rows: int
    realised: dict[str, float]
    """``pi`` and the regular precision, F1 and AP of its labelled rows."""
    nowcast: Nowcast
    recent: RecentFit | None
    """The misfit tests on it with up to six windows before it, as the worker runs them (None
    for a stream's first window)."""
    warned_independent: bool
    """The worker's rule with independent rows assumed (no dispersion: the rule before it)."""

    @property
    def warned_alone(self) -> bool:
        """The window's own tests: either p-value under the worker's threshold."""
        return fit_p_value(self.nowcast.fit) < MISFIT_P_VALUE

    @property
    def warned(self) -> bool:
        """The worker's score-shift rule: the window alone, or the recent windows together."""
        return shift_reason(self.nowcast.fit, self.recent) is not None


def realised(scores: Float64Array, labels: BoolArray) -> dict[str, float]:
    """What the window's labels, once in, will show."""
    regular = evaluate_sketch(build_sketch(scores, labels, threshold=THRESHOLD), pi0=0.5).regular
    values = {"pi": float(labels.mean())}
    for name in METRICS:
        value = regular[name]
        values[name] = math.nan if value is None else float(value)
    return values


@dataclass
class Nowcaster:
    """A stream's windows nowcast in order, as the worker does: every row counted on the
    reference's bins, flagged rows at the threshold, the misfit tests on the window and on it
    with up to six windows before it (after the reference)."""

    reference: Reference
    stream: int
    replicates: int
    history: list[Int64Array] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    """``nowcast_window``'s time per window."""

    def window(self, scores: Float64Array, labels: BoolArray, *, seed: int) -> Window:
        """The next window's nowcast and what it realised."""
        ref = self.reference
        counts = ScoreHistogram.of(ref.edges, np.empty(0), np.empty(0), scores).rows
        flagged = int((scores >= THRESHOLD).sum())
        start = time.perf_counter()
        estimate = nowcast_window(
            counts,
            flagged,
            ref.classes,
            ref.sketch,
            seed=seed,
            replicates=self.replicates,
            dispersion=ref.dispersion,
        )
        self.seconds.append(time.perf_counter() - start)
        before = self.history[-(RECENT_WINDOWS - 1) :]
        total = (counts + np.sum(before, axis=0)).astype(np.int64) if before else None
        self.history.append(counts)
        return Window(
            self.stream,
            len(self.history) - 1,
            scores.size,
            realised(scores, labels),
            estimate,
            self._recent(total, len(before) + 1, ref.dispersion),
            shift_reason(
                pooled_fit(counts, ref.classes, ref.sketch), self._recent(total, len(before) + 1)
            )
            is not None,
        )

    def _recent(
        self, total: Int64Array | None, windows: int, dispersion: Dispersion = NO_DISPERSION
    ) -> RecentFit | None:
        if total is None:
            return None
        ref = self.reference
        return RecentFit(windows, pooled_fit(total, ref.classes, ref.sketch, dispersion=dispersion))


def window_seed(*key: int) -> int:
    """The nowcast bootstrap's seed for a window."""
    return int(np.random.SeedSequence(list(key)).generate_state(1)[0])


# --- summaries of a window's scores (table 3) --------------------------------------------------


@dataclass(frozen=True)
class Summarised:
    """A summary's fraud rate for one window, its 95% interval, cost and size."""

    pi: float
    interval: Interval | None
    seconds: float
    size: int


def _load_datasketches() -> Any:
    try:
        return importlib.import_module("datasketches")
    except ImportError:
        return None


DATASKETCHES = _load_datasketches()
"""Apache DataSketches, if installed (a bench-only extra: ``pip install datasketches``)."""


def oracle(scores: Float64Array, rows: int) -> Summarised:
    """Maximum likelihood on the exact scores with the true class densities, and its Wald
    interval from the observed information: the floor no summary of the scores can beat."""
    start = time.perf_counter()
    excess = np.exp(HEALTHY_MU * scores - HEALTHY_MU**2 / 2.0) - 1.0  # f1/f0 - 1 per row

    def slope(pi: float) -> float:
        return float((excess / (1.0 + pi * excess)).sum())

    if slope(0.0) <= 0:
        pi = 0.0
    elif slope(1.0) >= 0:
        pi = 1.0
    else:
        pi = float(brentq(slope, 0.0, 1.0, xtol=1e-12))
    information = float(((excess / (1.0 + pi * excess)) ** 2).sum())
    half = 1.959964 / math.sqrt(information)
    seconds = time.perf_counter() - start
    return Summarised(pi, (pi - half, pi + half), seconds, 8 * rows)


def binned(
    reference: Reference,
    scores: Float64Array,
    *,
    kind: str,
    seed: int,
    replicates: int,
) -> Summarised:
    """A summary read as counts on bins, fitted with the reference's densities on the same
    bins; the interval from ``nowcast_window`` on those counts (the same bootstrap as calmon's).

    ``bins``: calmon's (``ScoreHistogram``); ``wide``: 100 equal-width bins; ``kll``/``req``: the
    DataSketches sketch of the scores, its CDF read at calmon's edges.
    """
    edges, classes = reference.edges, reference.classes
    start = time.perf_counter()
    if kind == "bins":
        summary = ScoreHistogram.of(edges, np.empty(0), np.empty(0), scores)
        size = len(summary.to_bytes())
        counts = summary.rows
    elif kind == "wide":
        edges, classes = reference.wide_edges, reference.wide_classes
        counts = histogram(scores, edges)
        size = len(counts.astype("<i8").tobytes())
    else:
        sketch = (
            DATASKETCHES.kll_doubles_sketch(200)
            if kind == "kll"
            # High-rank accuracy: the fraud scores live in the top tail.
            else DATASKETCHES.req_floats_sketch(12, True)
        )
        sketch.update(scores if kind == "kll" else scores.astype(np.float32))
        stored = sketch.serialize()
        size = len(stored)
        readback = type(sketch).deserialize(stored)
        cdf = np.array(readback.get_cdf(edges.tolist()), dtype=np.float64)
        counts = np.rint(np.diff(np.concatenate([[0.0], cdf])) * scores.size).astype(np.int64)
    f1, f0 = classes.densities()
    pi = float(fit_prior(counts[None, :].astype(np.float64), f1, f0)[0])
    seconds = time.perf_counter() - start
    # Only pi is compared: the flagged count (used by the adjusted count) is the exact one.
    flagged = int((scores >= THRESHOLD).sum())
    estimate = nowcast_window(
        counts, flagged, classes, reference.sketch, seed=seed, replicates=replicates
    )
    return Summarised(pi, estimate.pi_interval, seconds, size)


SUMMARIES = {
    "bins": "calmon's bins (ScoreHistogram on bin_edges)",
    "oracle": "oracle: exact scores, true densities",
    "kll": "DataSketches KLL (k=200), read on calmon's edges",
    "req": "DataSketches REQ (k=12, high-rank accuracy), read on calmon's edges",
    "wide": "fixed 100-bin equal-width histogram",
}


# --- the pure-prior-drift run (tables 1, 3, 4) -------------------------------------------------


@dataclass(frozen=True)
class Config:
    """How much to simulate: ``streams`` references with ``windows`` drifting windows each, and
    ``shift_windows`` windows per score-shift scenario."""

    streams: int = 20
    windows: int = 50
    shift_windows: int = 300
    replicates: int = 400
    seed: int = 0
    summaries: tuple[str, ...] = ("bins", "oracle", "kll", "req", "wide")
    cost_rows: tuple[int, ...] = (20_000, 1_000_000)
    nannyml_python: str | None = None
    burst_streams: int = 10
    """Table 6 (bench/nowcast_bursts.py): streams a row, ``burst_windows`` windows each."""
    burst_windows: int = 100
    quick_bursts: bool = False
    """Table 6 on one size and the stress rows only (the smoke run)."""


@dataclass
class DriftRun:
    """The drifting windows of every stream, and each summary's estimates on them."""

    windows: list[Window] = field(default_factory=list)
    summaries: dict[str, list[Summarised]] = field(default_factory=dict)
    nowcast_seconds: list[float] = field(default_factory=list)


def run_drift(config: Config) -> DriftRun:
    """Every stream's reference, then its windows: nowcast, realised values, summaries."""
    run = DriftRun(summaries={k: [] for k in config.summaries if _available(k)})
    for stream in range(config.streams):
        reference = build_reference(reference_rows(config.seed, stream))
        nowcaster = Nowcaster(reference, stream, config.replicates)
        for w in range(config.windows):
            rng = generator(config.seed, stream, 1, w)
            scores, labels = draw(rng, ROWS, drifting_pi(rng))
            seed = window_seed(config.seed, stream, 1, w)
            run.windows.append(nowcaster.window(scores, labels, seed=seed))
            for kind, out in run.summaries.items():
                out.append(
                    oracle(scores, ROWS)
                    if kind == "oracle"
                    else binned(
                        reference, scores, kind=kind, seed=seed, replicates=config.replicates
                    )
                )
        run.nowcast_seconds += nowcaster.seconds
    return run


def _available(kind: str) -> bool:
    return kind not in ("kll", "req") or DATASKETCHES is not None


# --- statistics --------------------------------------------------------------------------------


def coverage(intervals: Sequence[Interval | None], truths: Sequence[float]) -> tuple[float, int]:
    """Share of the defined intervals holding the truth, and how many were defined."""
    pairs = [(i, t) for i, t in zip(intervals, truths, strict=True) if i is not None]
    if not pairs:
        return math.nan, 0
    return sum(lo <= t <= hi for (lo, hi), t in pairs) / len(pairs), len(pairs)


def errors(estimates: Sequence[float | None], truths: Sequence[float]) -> Float64Array:
    """Signed errors where both the estimate and the truth are defined."""
    pairs = [
        e - t
        for e, t in zip(estimates, truths, strict=True)
        if e is not None and math.isfinite(e) and math.isfinite(t)
    ]
    return np.array(pairs, dtype=np.float64)


def rmse(values: Float64Array) -> float:
    """Root mean square of the errors."""
    return float(np.sqrt((values**2).mean())) if values.size else math.nan


def _within(value: float, bounds: tuple[float, float]) -> str:
    return "yes" if bounds[0] <= value <= bounds[1] else "**no**"


# --- tables ------------------------------------------------------------------------------------


def accuracy_table(run: DriftRun) -> Iterator[str]:
    """Table 1: the nowcast against what each window realised."""
    windows = run.windows
    yield (
        f"{len(windows):,} windows of {ROWS:,} rows ({len(windows) // max(_streams(run), 1)} "
        f"in each of {_streams(run)} streams, each with its own reference), pi log-uniform "
        f"{PI_RANGE[0]}-{PI_RANGE[1]}; 95% intervals.\n"
    )
    yield (
        "| estimate | vs realised | estimates / intervals defined | mean signed error | RMSE "
        "| mean abs. error "
        "| mean interval width | coverage (target 90-99%) | targets met |"
    )
    yield "|---|---|---:|---:|---:|---:|---:|---:|---|"
    pis = [w.realised["pi"] for w in windows]
    rows: list[tuple[str, str, list[float | None], list[Interval | None], list[float]]] = [
        (
            "pi, maximum likelihood",
            "pi",
            [w.nowcast.pi for w in windows],
            [w.nowcast.pi_interval for w in windows],
            pis,
        ),
        (
            "pi, adjusted classify-and-count",
            "pi",
            [w.nowcast.adjusted_count for w in windows],
            [w.nowcast.adjusted_count_interval for w in windows],
            pis,
        ),
    ]
    for name in METRICS:
        rows.append(
            (
                f"expected {name}",
                name,
                [w.nowcast.expected[name] for w in windows],
                [w.nowcast.intervals[name] for w in windows],
                [w.realised[name] for w in windows],
            )
        )
    undefined: list[str] = []
    for label, truth_name, estimates, intervals, truths in rows:
        err = errors(estimates, truths)
        share, defined = coverage(intervals, truths)
        missing = [p for p, i in zip(pis, intervals, strict=True) if i is None]
        if missing:
            undefined.append(
                f"{label}: no interval in {len(missing)} windows, all at realised pi "
                f"<= {max(missing):.4f}"
            )
        widths = [hi - lo for lo, hi in (i for i in intervals if i is not None)]
        met = _within(share, COVERAGE_TARGET)
        if truth_name != "pi":
            met += f" / mean error {_within(abs(float(err.mean())), (0.0, ERROR_TARGET))}"
        yield (
            f"| {label} | realised {truth_name} | {err.size:,} / {defined:,} | {err.mean():+.4f} "
            f"| {rmse(err):.4f} | {np.abs(err).mean():.4f} | {np.mean(widths):.4f} "
            f"| {share:.1%} | {met} |"
        )
    if undefined:
        yield "\nUndefined intervals (left out of the coverage): " + "; ".join(undefined) + "."


def _streams(run: DriftRun) -> int:
    return len({w.stream for w in run.windows})


@dataclass(frozen=True)
class Scenario:
    """A score-shift scenario: rows a window, its fraud rate (None: drifting) and class means."""

    name: str
    rows: int
    pi: float | None
    legit_mu: float = LEGIT_MU
    fraud_mu: float = HEALTHY_MU


SHIFTS = (
    Scenario(f"legit scores shift, mean 0 -> {LEGIT_SHIFTED}", ROWS, None, legit_mu=LEGIT_SHIFTED),
    Scenario(
        f"fraud scores shift, mean 2.5 -> {FRAUD_SHIFTED} (100 frauds)",
        ROWS,
        REFERENCE_PI,
        fraud_mu=FRAUD_SHIFTED,
    ),
    Scenario(
        f"fraud scores shift, mean 2.5 -> {FRAUD_SHIFTED} (500 frauds)",
        100_000,
        REFERENCE_PI,
        fraud_mu=FRAUD_SHIFTED,
    ),
)


def run_shift(config: Config, scenario: Scenario, tag: int) -> list[Window]:
    """About ``shift_windows`` windows of the scenario, in every stream (its own reference):
    the shift starts with the stream's first window after the reference and lasts."""
    out: list[Window] = []
    per_stream = math.ceil(config.shift_windows / config.streams)
    for stream in range(config.streams):
        nowcaster = Nowcaster(
            build_reference(reference_rows(config.seed, stream)), stream, config.replicates
        )
        for w in range(per_stream):
            rng = generator(config.seed, stream, tag, w)
            pi = scenario.pi if scenario.pi is not None else drifting_pi(rng)
            scores, labels = draw(
                rng, scenario.rows, pi, legit_mu=scenario.legit_mu, fraud_mu=scenario.fraud_mu
            )
            out.append(
                nowcaster.window(scores, labels, seed=window_seed(config.seed, stream, tag, w))
            )
    return out


def shift_table(run: DriftRun, shifted: Sequence[tuple[Scenario, list[Window]]]) -> Iterator[str]:
    """Table 2: how often the score-shift warning fires, and what the estimates do then."""
    yield (
        "| scenario | windows (streams) | rows a window | frauds a window (mean) "
        "| a window alone: warned (share; 95% upper) | G-test / tilt test "
        f"| {RECENT_WINDOWS} windows together: warned | the worker's rule: warned (share; 95% "
        "upper) | the same, independent rows assumed (before the dispersion) "
        f"| streams warned within their first {RECENT_WINDOWS} windows "
        "| realised / estimated pi (means) | realised / expected precision (means) "
        "| precision interval coverage |"
    )
    yield "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    drift = Scenario("pure prior drift (any warning is false; target < 1%)", ROWS, None)
    for scenario, windows in [(drift, run.windows), *shifted]:
        g = np.mean([w.nowcast.fit.p_value < MISFIT_P_VALUE for w in windows])
        tilt = np.mean([w.nowcast.fit.tilt_p_value < MISFIT_P_VALUE for w in windows])
        full = [w for w in windows if w.recent is not None and w.recent.windows == RECENT_WINDOWS]
        together = sum(fit_p_value(w.recent.fit) < MISFIT_P_VALUE for w in full if w.recent)
        streams = sorted({w.stream for w in windows})
        early = sum(
            any(w.warned for w in windows if w.stream == k and w.position < RECENT_WINDOWS)
            for k in streams
        )
        pis = _means([w.realised["pi"] for w in windows], [w.nowcast.pi for w in windows])
        precision = _means(
            [w.realised["precision"] for w in windows],
            [w.nowcast.expected["precision"] for w in windows],
        )
        share, _ = coverage(
            [w.nowcast.intervals["precision"] for w in windows],
            [w.realised["precision"] for w in windows],
        )
        frauds = np.mean([w.realised["pi"] * w.rows for w in windows])
        yield (
            f"| {scenario.name} | {len(windows):,} ({len(streams)}) | {scenario.rows:,} "
            f"| {frauds:.0f} | {_count([w.warned_alone for w in windows])} "
            f"| {g:.1%} / {tilt:.1%} | {_share(together, len(full))} "
            f"| {_count([w.warned for w in windows])} "
            f"| {_count([w.warned_independent for w in windows])} | {early} of {len(streams)} "
            f"| {pis[0]:.5f} / {pis[1]:.5f} | {precision[0]:.3f} / {precision[1]:.3f} "
            f"| {share:.1%} |"
        )


def _count(flags: Sequence[bool]) -> str:
    events = sum(flags)
    return f"{events} ({events / len(flags):.1%}; {upper_95(events, len(flags)):.1%})"


def _share(events: int, trials: int) -> str:
    return f"{events} of {trials} ({events / trials:.1%})" if trials else "n/a"


def _means(truths: Sequence[float], estimates: Sequence[float | None]) -> tuple[float, float]:
    """Means of the realised values and of the estimates, over the windows with both."""
    pairs = [(t, e) for t, e in zip(truths, estimates, strict=True) if e is not None]
    return float(np.mean([t for t, _ in pairs])), float(np.mean([e for _, e in pairs]))


def upper_95(events: int, trials: int) -> float:
    """The exact (Clopper-Pearson) 95% interval's upper end for a proportion."""
    return float(beta.ppf(0.975, events + 1, trials - events)) if events < trials else 1.0


def shift_notes(shifted: Sequence[tuple[Scenario, list[Window]]]) -> Iterator[str]:
    """What scores alone tell apart, in the measured numbers."""
    alone = {s.name: np.mean([w.warned_alone for w in ws]) for s, ws in shifted}
    rule = {s.name: np.mean([w.warned for w in ws]) for s, ws in shifted}
    ratios = {
        s.name: np.mean([w.nowcast.pi for w in ws]) / np.mean([w.realised["pi"] for w in ws])
        for s, ws in shifted
    }
    legit, fraud100, fraud500 = (s.name for s, _ in shifted)
    first = [w.warned_alone for s, ws in shifted if s.name == legit for w in ws if w.position == 0]
    yield (
        "\nA shift of the legitimate scores (most of the rows) changes the shape of the whole "
        f"histogram: a window alone warned in {alone[legit]:.0%} of windows (the first window "
        f"after the shift: {sum(first)} of {len(first)} streams), and rightly so: its "
        "estimates mean nothing (the estimated pi "
        f"{ratios[legit]:.1f}x the realised one). A shift of the fraud scores alone mostly reads "
        f"as a lower fraud rate: a window alone warned in {alone[fraud100]:.0%} of windows at "
        f"100 frauds and {alone[fraud500]:.0%} at 500 (the worker's rule, with the recent "
        f"windows together: {rule[fraud100]:.0%} and {rule[fraud500]:.0%}), while the estimated "
        f"pi is {ratios[fraud100]:.2f}x (100 frauds) and {ratios[fraud500]:.2f}x (500) the "
        "realised one: fewer frauds scoring high looks like fewer frauds. Scores alone cannot "
        "separate a lower fraud rate from frauds that moved into the legitimate scores' range; "
        "the labels decide it."
    )


def summary_table(run: DriftRun, config: Config) -> Iterator[str]:
    """Table 3: which summary of a window's scores, by accuracy and size."""
    truths = [w.realised["pi"] for w in run.windows]
    yield f"{len(truths):,} pure-prior-drift windows of {ROWS:,} rows (table 1's).\n"
    yield (
        "| summary | bytes a window | ms a window (summarise + fit pi) | x calmon's bins "
        "| pi RMSE | x oracle's RMSE | pi mean signed error | 95% interval coverage |"
    )
    yield "|---|---:|---:|---:|---:|---:|---:|---:|"
    stats: dict[str, tuple[float, float]] = {}
    for kind, results in run.summaries.items():
        err = errors([r.pi for r in results], truths)
        stats[kind] = (float(np.median([r.seconds for r in results])), rmse(err))
    base_time = stats.get("bins", (math.nan, math.nan))[0]
    floor = stats.get("oracle", (math.nan, math.nan))[1]
    for kind, results in run.summaries.items():
        seconds, error = stats[kind]
        err = errors([r.pi for r in results], truths)
        share, _ = coverage([r.interval for r in results], truths)
        yield (
            f"| {SUMMARIES[kind]} | {int(np.median([r.size for r in results])):,} "
            f"| {seconds * 1e3:.2f} | {seconds / base_time:.1f} | {error:.5f} "
            f"| {error / floor:.2f} | {err.mean():+.5f} | {share:.1%} |"
        )
    missing = [k for k in config.summaries if k not in run.summaries]
    if missing:
        yield (
            f"\n({', '.join(missing)} skipped: `import datasketches` failed; "
            "`pip install datasketches` to measure them.)"
        )
    bins = run.summaries.get("bins")
    # A window's ScoreHistogram holds three int64 arrays after a 10-byte header; unlabelled rows
    # fill one of them.
    single = (
        f"; one array alone is {(int(np.median([r.size for r in bins])) - 10) // 3:,} bytes"
        if bins
        else ""
    )
    yield (
        "\nBytes: calmon's `ScoreHistogram.to_bytes()`, three int64 arrays (frauds / legitimate / "
        f"unlabelled rows per bin) and a header{single}; the sketches' `serialize()`; the exact "
        "scores as float64, the fixed histogram as one int64 array. The oracle's interval is the "
        "Wald interval from the observed information; the others are `nowcast_window`'s bootstrap "
        "on each summary's counts. Time: the median over windows, the summary built, serialised "
        "(sketches: read back) and pi fitted. KLL and REQ compact with the library's own "
        "unseeded randomness: their rows move a little from run to run."
    )


# --- CBPE, the peer (table 4) ------------------------------------------------------------------


def export_for_peer(config: Config, folder: Path) -> None:
    """One .npz per stream: the reference rows (labelled) and the drifting windows' rows, with
    what CBPE is given (probability, prediction) and each row's window (its day)."""
    for stream in range(config.streams):
        ref = reference_rows(config.seed, stream)
        ref_scores = np.concatenate([s for s, _ in ref])
        analysis = []
        for w in range(config.windows):
            rng = generator(config.seed, stream, 1, w)
            analysis.append(draw(rng, ROWS, drifting_pi(rng))[0])
        ana_scores = np.concatenate(analysis)
        np.savez(
            folder / f"stream_{stream:03d}.npz",
            ref_proba=posterior(ref_scores),
            ref_pred=(ref_scores >= THRESHOLD).astype(np.int8),
            ref_label=np.concatenate([y for _, y in ref]).astype(np.int8),
            ref_day=np.repeat(np.arange(REFERENCE_WINDOWS), ROWS),
            ana_proba=posterior(ana_scores),
            ana_pred=(ana_scores >= THRESHOLD).astype(np.int8),
            ana_day=np.repeat(np.arange(config.windows), ROWS),
        )


def run_peer(config: Config, python: str) -> tuple[dict[str, Any], float]:
    """Run bench/peers/cbpe_nannyml.py in its own interpreter; its JSON and wall seconds."""
    with tempfile.TemporaryDirectory(prefix="calmon-cbpe-") as tmp:
        folder = Path(tmp)
        export_for_peer(config, folder)
        out = folder / "estimates.json"
        start = time.perf_counter()
        subprocess.run([python, str(PEER), str(folder), str(out)], check=True)
        seconds = time.perf_counter() - start
        result: dict[str, Any] = json.loads(out.read_text())
    return result, seconds


def peer_table(run: DriftRun, peer: dict[str, Any], seconds: float) -> Iterator[str]:
    """Table 4: realised precision (F1, AP) vs calmon's expected vs CBPE's estimate."""
    calibrated = sum(s["needs_calibration"] for s in peer["streams"])
    cbpe_seconds = sum(s["seconds"] for s in peer["streams"])
    our_seconds = sum(run.nowcast_seconds)
    yield (
        f"NannyML {peer['nannyml']} CBPE on the same {len(run.windows):,} windows (one reference "
        f"per stream, {len(peer['streams'])} streams; CBPE fitted its isotonic calibrator on "
        f"{calibrated} of the {len(peer['streams'])} references). Time, fit and estimate: CBPE "
        f"{cbpe_seconds:.1f} s (the whole peer run, with the export and its interpreter's start: "
        f"{seconds:.0f} s); calmon's `nowcast_window` on the same windows {our_seconds:.1f} s "
        f"(CBPE / calmon: {cbpe_seconds / our_seconds:.1f}x; calmon's reference bins and "
        "sketch are built once per stream, outside that time).\n"
    )
    header = " | ".join(f"pi {_bin_label(b)}" for b in PI_BINS)
    yield (
        "| metric | estimator | windows | mean signed error | mean abs. error "
        f"| {header} (mean signed error) | its interval's coverage |"
    )
    yield "|---|---|---:|---:|---:|" + "---:|" * len(PI_BINS) + "---|"
    pis = np.array([w.realised["pi"] for w in run.windows])
    for name in METRICS:
        truths = [w.realised[name] for w in run.windows]
        cbpe = [v for s in peer["streams"] for v in s[name]["value"]]
        bands: list[Interval | None] = [
            (lo, hi)
            for s in peer["streams"]
            for lo, hi in zip(s[name]["lower"], s[name]["upper"], strict=True)
        ]
        ours = [w.nowcast.expected[name] for w in run.windows]
        for label, estimates, intervals, what in (
            ("calmon (expected)", ours, [w.nowcast.intervals[name] for w in run.windows], "95%"),
            ("NannyML CBPE", cbpe, bands, "+-3 sampling errors"),
        ):
            err = errors(estimates, truths)
            by_bin = []
            for low, high in PI_BINS:
                inside = (pis >= low) & (pis < high)
                part = errors(
                    [e for e, i in zip(estimates, inside, strict=True) if i],
                    [t for t, i in zip(truths, inside, strict=True) if i],
                )
                by_bin.append(f"{part.mean():+.4f} ({part.size})")
            share, _ = coverage(intervals, truths)
            yield (
                f"| {name} | {label} | {err.size:,} | {err.mean():+.4f} | {np.abs(err).mean():.4f} "
                f"| {' | '.join(by_bin)} | {share:.1%} ({what}) |"
            )


def _bin_label(bounds: tuple[float, float]) -> str:
    low, high = bounds
    if low == 0.0:
        return f"< {high}"
    if high >= 1.0:
        return f">= {low}"
    return f"{low}-{high}"


# --- cost (table 5) ----------------------------------------------------------------------------


def _best_of(fn: Callable[[], object], repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cost_table(config: Config) -> Iterator[str]:
    """Table 5: counting a window into bins vs building its curve sketch; the nowcast; bytes."""
    yield (
        "| rows a window | bins | np.sort ms (floor) | ScoreHistogram.of ms | build_sketch ms "
        "| ScoreHistogram.of / build_sketch | ScoreHistogram.of / np.sort "
        f"| nowcast_window ms ({config.replicates} replicates) | ScoreHistogram bytes "
        "| CurveSketch bytes |"
    )
    yield "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for rows in config.cost_rows:
        yield _cost_row(config, rows)
    yield (
        "\nScoreHistogram.of counts labelled rows by class (the reference's use); the nowcast is "
        "fitted on a window at pi = 0.01 against a reference made of the one window the bins "
        "were cut from. CurveSketch bytes: the labelled window's curve sketch, for scale."
    )


def _cost_row(config: Config, rows: int) -> str:
    rng = generator(config.seed, 0, 9, rows)
    scores, labels = draw(rng, rows, REFERENCE_PI)
    # The bins as the worker cuts them for a model of this volume: from one such window.
    edges = bin_edges(scores, THRESHOLD)
    none = np.empty(0)
    reference = ScoreHistogram.of(edges, scores, labels, none)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD)
    repeats = 7 if rows <= 100_000 else 3
    sorting = _best_of(lambda: np.sort(scores), repeats)
    counting = _best_of(lambda: ScoreHistogram.of(edges, scores, labels, none), repeats)
    sketching = _best_of(lambda: build_sketch(scores, labels, threshold=THRESHOLD), repeats)
    window, _ = draw(generator(config.seed, 0, 10, rows), rows, 0.01)
    counts = histogram(window, edges)
    flagged = int((window >= THRESHOLD).sum())
    classes = reference.classes(edges)
    nowcasting = _best_of(
        lambda: nowcast_window(
            counts, flagged, classes, sketch, seed=1, replicates=config.replicates
        ),
        repeats,
    )
    return (
        f"| {rows:,} | {edges.size + 1} | {sorting * 1e3:.2f} | {counting * 1e3:.2f} "
        f"| {sketching * 1e3:.2f} | {counting / sketching:.2f} | {counting / sorting:.2f} "
        f"| {nowcasting * 1e3:.1f} "
        f"| {len(reference.to_bytes()):,} | {len(sketch.to_bytes()):,} |"
    )


# --- the run -----------------------------------------------------------------------------------


def bursts_section(config: Config) -> Iterator[str]:
    """Table 6 (bench/nowcast_bursts.py, which imports this module's statistics)."""
    from bench import nowcast_bursts  # noqa: PLC0415 (it imports this module)

    bursts = nowcast_bursts.BurstConfig(
        streams=config.burst_streams, windows=config.burst_windows, seed=config.seed
    )
    if config.quick_bursts:
        bursts = nowcast_bursts.BurstConfig(
            streams=config.burst_streams,
            windows=config.burst_windows,
            bursts=(1.0, 4.0),
            sizes=(100,),
            scenarios=("day_to_day", "steady"),
            stress=((8.0, 0.95),),
            seed=config.seed,
        )
    yield from nowcast_bursts.bursts_table(bursts)


def provenance() -> str:
    """The code measured: its commit, and whether the files measured differ from it."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--", "app/metrics", "app/monitoring", "bench"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "outside a git checkout"
    return f"commit {head}" + (" with uncommitted changes to the code measured" if changed else "")


def run(config: Config, out: Callable[[str], None] = print) -> None:
    """Every table, printed as markdown."""
    started = time.perf_counter()
    out(
        f"Measured at {provenance()}: {config.streams} streams x {config.windows} windows, "
        f"{config.shift_windows} windows per score shift, {config.replicates} bootstrap "
        f"replicates, seed {config.seed}."
    )
    out("\n### 1. Pure prior drift: the nowcast against the realised values\n")
    drift = run_drift(config)
    for line in accuracy_table(drift):
        out(line)
    out(f"\n({time.perf_counter() - started:.0f} s, with table 3's summaries)")

    section = time.perf_counter()
    out(f"\n### 2. Score-shift warning (a test's p < {MISFIT_P_VALUE:g}, the worker's rule)\n")
    shifted = [(s, run_shift(config, s, tag)) for tag, s in enumerate(SHIFTS, start=2)]
    for line in shift_table(drift, shifted):
        out(line)
    for line in shift_notes(shifted):
        out(line)
    out(f"\n({time.perf_counter() - section:.0f} s)")

    section = time.perf_counter()
    out("\n### 6. Score-shift warning on healthy streams whose frauds come in bursts\n")
    for line in bursts_section(config):
        out(line)
    out(f"\n({time.perf_counter() - section:.0f} s)")

    out("\n### 3. Which summary of a window's scores\n")
    for line in summary_table(drift, config):
        out(line)

    out("\n### 4. Beside NannyML's CBPE (confidence-based performance estimation)\n")
    if config.nannyml_python is None:
        out(
            "(skipped: no NannyML interpreter; pass --nannyml-python or set "
            "CALMON_NANNYML_PYTHON to a virtualenv's python with nannyml installed)"
        )
    else:
        peer, seconds = run_peer(config, config.nannyml_python)
        for line in peer_table(drift, peer, seconds):
            out(line)

    section = time.perf_counter()
    out("\n### 5. Cost\n")
    for line in cost_table(config):
        out(line)
    total = time.perf_counter() - started
    out(f"\n({time.perf_counter() - section:.1f} s; everything: {total:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20, help="streams (one reference each)")
    parser.add_argument("--windows", type=int, default=50, help="drifting windows per stream")
    parser.add_argument("--trials", type=int, default=300, help="windows per score shift")
    parser.add_argument("--replicates", type=int, default=400, help="nowcast bootstrap size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--nannyml-python",
        default=os.environ.get("CALMON_NANNYML_PYTHON"),
        help="python of a virtualenv with nannyml (default: $CALMON_NANNYML_PYTHON; else skipped)",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run of every table")
    parser.add_argument(
        "--bursts-only", action="store_true", help="table 6 alone (bursty streams, ~6 minutes)"
    )
    args = parser.parse_args(argv)
    if args.bursts_only:
        for line in bursts_section(Config(seed=args.seed)):
            print(line)
        return 0
    if args.quick:
        config = Config(
            streams=2,
            windows=20,
            shift_windows=10,
            cost_rows=(20_000, 200_000),
            seed=args.seed,
            nannyml_python=args.nannyml_python,
            burst_streams=1,
            burst_windows=30,
            quick_bursts=True,
        )
    else:
        config = Config(
            streams=args.seeds,
            windows=args.windows,
            shift_windows=args.trials,
            replicates=args.replicates,
            seed=args.seed,
            nannyml_python=args.nannyml_python,
        )
    run(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
