"""The sanity report of bench/label_feeds.py (``python -m bench.label_feeds --describe``).

Each feed runs on one steady stream (pi 0.005, the healthy model) and the tables pool its
windows: when a window's eventually-labelled frauds are labelled (days after the window's end),
flagged and not; how much of the alert queue is reviewed; the bursts as drawn. Last, what a
1,000-fraud window costs beside the floor of drawing its rows' scores one by one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics.mixture import histogram
from bench.detection import Day, prior_drift
from bench.label_feeds import CHARGEBACK, FEEDBACK, NEVER, FeedConfig, Stream, simulate
from bench.simulation import THRESHOLD

VARIANTS = {
    "default": FeedConfig(),
    "feedback_by_score": FeedConfig(feedback_by_score=True),
    "speed_change -1/3": FeedConfig(speed_change=-1 / 3),
    "speed_change +1/3": FeedConfig(speed_change=1 / 3),
    "misses_slower 2": FeedConfig(misses_slower=2.0),
    "burst_mean 4": FeedConfig(burst_mean=4.0),
}
LOOKS = (1, 3, 7, 14, 30)
"""Days after a window's end."""


def _cat(stream: Stream, field: str) -> npt.NDArray[Any]:
    return np.concatenate([getattr(w, field) for w in stream.windows])


def _delays(stream: Stream, windows: slice = slice(None)) -> npt.NDArray[Any]:
    """Chargebacks' delays from their transaction, in days."""
    parts = []
    for w in stream.windows[windows]:
        charged = w.fraud_sources == CHARGEBACK
        parts.append(w.fraud_arrival_days[charged] + 1.0 - w.fraud_times[charged])
    return np.concatenate(parts)


def arrival_rows(name: str, stream: Stream) -> Iterator[str]:
    """Two rows of the arrival table: the flagged frauds and the missed ones."""
    flagged = _cat(stream, "fraud_scores") >= THRESHOLD
    arrival = _cat(stream, "fraud_arrival_days")
    sources = _cat(stream, "fraud_sources")
    delays = _delays(stream)
    charged_flagged = flagged[sources == CHARGEBACK]
    for label, group in (("flagged", flagged), ("not flagged", ~flagged)):
        eventual = arrival[group & (sources != NEVER)]
        shares = " | ".join(f"{np.mean(eventual <= d):.1%}" for d in LOOKS)
        never = np.mean(sources[group] == NEVER)
        mine = delays[charged_flagged == (label == "flagged")]
        delay = f"{np.median(mine):.1f} ({mine.max():.1f})" if mine.size else "-"
        yield f"| {name} | {label} | {group.sum():,} | {shares} | {never:.2%} | {delay} |"


def queue_row(name: str, stream: Stream, days: Sequence[Day]) -> str:
    """The review and burst figures of one feed."""
    windows = stream.windows
    flagged_rows = sum(w.flagged for w in windows)
    cleared = sum(w.cleared_bins.size for w in windows)
    scores, sources = _cat(stream, "fraud_scores"), _cat(stream, "fraud_sources")
    flagged = scores >= THRESHOLD
    reviewed_frauds = int(np.sum(sources[flagged] == FEEDBACK))
    legit_flagged = flagged_rows - int(flagged.sum())
    expected = sum(day.pi * w.rows for day, w in zip(days, windows, strict=True))
    frauds_ratio = sum(w.frauds for w in windows) / expected
    entities = _cat(stream, "fraud_entities")
    _, per_entity = np.unique(entities, return_counts=True)
    correlation = _within_entity_correlation(entities, scores)
    tenth = max(len(windows) // 10, 1)
    first, last = _delays(stream, slice(0, tenth)), _delays(stream, slice(-tenth, None))
    return (
        f"| {name} | {(reviewed_frauds + cleared) / flagged_rows:.1%} "
        f"| {reviewed_frauds / flagged.sum():.1%} | {cleared / legit_flagged:.1%} "
        f"| {frauds_ratio:.3f} | {per_entity.mean():.2f} | {np.mean(per_entity > 1):.1%} "
        f"| {correlation} | {np.median(first):.1f} / {np.median(last):.1f} |"
    )


def _within_entity_correlation(entities: npt.NDArray[Any], scores: npt.NDArray[Any]) -> str:
    """Correlation of the first two scores of each entity with at least two frauds."""
    first = np.concatenate(([True], entities[1:] != entities[:-1]))
    starts = np.flatnonzero(first)
    pairs = starts[(starts + 1 < entities.size)]
    pairs = pairs[entities[np.minimum(pairs + 1, entities.size - 1)] == entities[pairs]]
    if pairs.size < 3:
        return "-"
    return f"{np.corrcoef(scores[pairs], scores[pairs + 1])[0, 1]:.2f}"


def cost_line(seed: int) -> str:
    """A 1,000-fraud window's cost, beside drawing and binning its rows' scores one by one."""
    days = prior_drift("steady", 100, np.random.default_rng(seed))
    started = time.perf_counter()
    stream = simulate(days, 1_000, FeedConfig(), seed)
    per_window = (time.perf_counter() - started) / len(days)
    rows = stream.windows[0].rows
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    for _ in range(5):
        histogram(rng.standard_normal(rows), stream.edges)
    floor = (time.perf_counter() - started) / 5
    return (
        f"A 1,000-fraud window ({rows:,} rows): {per_window * 1e3:.1f} ms, "
        f"{per_window / floor:.2f}x the floor of drawing and binning its rows' scores "
        f"one by one ({floor * 1e3:.1f} ms)."
    )


def describe(*, size: int, windows: int, seed: int, out: Callable[[str], None] = print) -> None:
    """Print the sanity tables: every variant on one steady stream of ``windows`` windows."""
    days = prior_drift("steady", windows, np.random.default_rng(seed))
    streams = {name: simulate(days, size, config, seed) for name, config in VARIANTS.items()}
    out(f"\n### When a window's eventual frauds are labelled ({size} a window, {windows} windows)")
    out("\n(share labelled by d days after the window's end; chargeback delay from the")
    out("transaction, median (max), days)\n")
    looks = " | ".join(f"{d} d" for d in LOOKS)
    out(f"| feed | which frauds | frauds | {looks} | never reported | chargeback delay |")
    out("|---|---|---:|" + "---:|" * len(LOOKS) + "---:|---|")
    for name, stream in streams.items():
        for line in arrival_rows(name, stream):
            out(line)
    out("\n### Alert reviews and bursts\n")
    out(
        "| feed | flagged rows reviewed | flagged frauds reviewed | flagged legitimate "
        "reviewed | frauds / pi N | frauds per entity | entities of 2+ | score correlation "
        "within an entity | chargeback median, first / last tenth of the run |"
    )
    out("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, stream in streams.items():
        out(queue_row(name, stream, days))
    out("\n" + cost_line(seed))
