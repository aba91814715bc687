"""One window segment evaluated at a pi0, and turned into rows.

No SQL here: the caller reads rows and sketches and writes the dictionaries this module returns.
The same code serves a fresh window (sketch built from raw rows) and a series recomputation
after a pi0 move (sketch read back from the database), so both give identical point values. The
recomputation's intervals are the stored ones moved along their prior grid (within a few
hundredths of an interval width of a fresh bootstrap, see app/metrics/prior_grid.py).

The verdict is not decided here: a window's stored verdict is carried over from its previous
computation once issued (app/windows/judging.py issues it), and is provisional until then.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.metrics import (
    METRICS,
    NO_BUDGET,
    Budget,
    CurveSketch,
    Decomposition,
    EvaluationResult,
    ScoreHistogram,
    evaluate_sketch,
)
from app.metrics.bootstrap import Intervals, bootstrap
from app.metrics.prior_grid import DEFAULT_PRIOR_GRID
from app.metrics.reporting import Arrivals
from app.monitoring.pi0 import WindowLabels
from app.monitoring.verdicts import StoredVerdict


@dataclass(frozen=True)
class SegmentInput:
    """What a segment's evaluation needs that does not depend on pi0."""

    segment: str
    window_start: datetime
    rows_total: int
    labelled: int
    positives: int
    sketch: CurveSketch | None
    score_counts: ScoreHistogram | None = None
    """Every row on the model's score bins (None before the model's bins are cut)."""
    flagged: int | None = None
    """Rows at or above the threshold, labelled or not."""
    arrivals: Arrivals | None = None
    """The labels by the look they arrived at (None before the model's bins are cut)."""
    sent_labels: int | None = None
    """Rows with a label sent, when the evaluation counts others too (a label horizon counts
    every row): what the label coverage is of."""
    budget: Budget = NO_BUDGET
    """The team's budget for the whole window (app.metrics.Budget.of: alert_capacity over the
    whole window's rows, and review_cost): every part's top-k metrics are taken at its share."""

    @property
    def labels(self) -> WindowLabels:
        """The segment's label counts (what pi0, maturity and the reference are chosen on)."""
        sent = self.sent_labels if self.sent_labels is not None else self.labelled
        coverage = sent / self.rows_total if self.rows_total else None
        return WindowLabels(self.window_start, self.labelled, self.positives, coverage)


@dataclass(frozen=True)
class Evaluated:
    """A segment evaluated at one pi0: point values and intervals (None without a sketch)."""

    source: SegmentInput
    pi0: float | None
    result: EvaluationResult | None
    intervals: Intervals | None


@dataclass(frozen=True)
class Draws:
    """How a model's bootstrap intervals are drawn: seeded by its name, window and segment (a
    recomputation gives equal intervals), with this many replicates."""

    model_name: str
    replicates: int


@dataclass(frozen=True)
class RowStamp:
    """What every row a computation writes records beside its values: the model and its
    threshold, the pi0 version evaluated at, the window version computed, when and how long."""

    model_id: int
    threshold: float
    pi0_version: int | None
    source_version: int
    computed_at: datetime
    duration_seconds: float


@dataclass(frozen=True)
class SegmentOutcome:
    """What a computation decided for one window segment: its evaluation, its verdict, its
    effects against its segment's reference, and whether its labels are complete
    (app/monitoring/maturity.py: readers show a mature window's measured values)."""

    current: Evaluated
    verdict: StoredVerdict
    effects: Decomposition | None
    mature: bool


def seed_for(model_name: str, window_start: datetime, segment: str, purpose: str = "") -> int:
    """A seed fixed by (model, window, segment): recomputation gives equal intervals. The
    detector's draws pass a ``purpose`` so that they are independent of the bootstrap's."""
    key = f"{model_name}|{window_start.isoformat()}|{segment}{purpose}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


def evaluate_segment(
    source: SegmentInput,
    pi0: float | None,
    draws: Draws,
    *,
    stored: Intervals | None = None,
    evaluated: EvaluationResult | None = None,
) -> Evaluated:
    """Point values and 95% bootstrap intervals of one segment at ``pi0``.

    ``stored`` are the segment's intervals from an earlier evaluation: when their prior grid
    covers ``pi0`` (and they have as many replicates), the calibrated intervals are moved there
    by interpolation (:mod:`app.metrics.prior_grid`) instead of rerunning the bootstrap, which
    then also draws a grid around ``pi0`` for the next move.

    ``evaluated`` are the point values if already computed at ``pi0`` (a series evaluates its
    sketches in one batch).

    Without a pi0 yet (no labelled history), the regular values are still worth storing; they
    are evaluated at the window's own prior, and :func:`rows_for` blanks the calibrated side.
    """
    if source.sketch is None or source.labelled == 0:
        return Evaluated(source, pi0, None, None)
    at = pi0 if pi0 is not None else _own_prior(source)
    if evaluated is not None and evaluated.pi0 != at:
        raise ValueError(f"point values at pi0 {evaluated.pi0} given for pi0 {at}")
    result = evaluated or evaluate_sketch(source.sketch, pi0=at, budget=source.budget)
    replicates = draws.replicates
    moved = stored.at_pi0(at) if stored is not None and stored.replicates == replicates else None
    intervals = moved or bootstrap(
        source.sketch,
        pi0=at,
        seed=seed_for(draws.model_name, source.window_start, source.segment),
        replicates=replicates,
        grid=DEFAULT_PRIOR_GRID if pi0 is not None else None,
        budget=source.budget,
        point=result,  # the bootstrap's centres: evaluated once a segment, not twice
    )
    return Evaluated(source, pi0, result, intervals)


def _own_prior(source: SegmentInput) -> float:
    pi = source.positives / source.labelled
    return pi if 0.0 < pi < 1.0 else 0.5


def rows_for(
    outcome: SegmentOutcome, stamp: RowStamp, *, with_sketch: bool = True, with_grid: bool = True
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``window_metrics`` row and the ``window_metric_values`` rows of one segment;
    ``with_sketch``/``with_grid``: write the sketch's and the interval grid's columns too."""
    current, verdict, effects = outcome.current, outcome.verdict, outcome.effects
    source = current.source
    counts = source.labels
    result = current.result.to_dict() if current.result is not None else None
    intervals = current.intervals.to_dict() if current.intervals is not None else None
    if result is not None and current.pi0 is None:
        result = _without_calibration(result)
        intervals = _without_calibration(intervals) if intervals is not None else None
    key = {
        "model_id": stamp.model_id,
        "window_start": source.window_start,
        "segment": source.segment,
    }
    row: dict[str, Any] = {
        **key,
        "rows_total": source.rows_total,
        "labelled": source.labelled,
        "positives": source.positives,
        "negatives": source.labelled - source.positives,
        "label_coverage": counts.label_coverage,
        "pi": source.positives / source.labelled if source.labelled else None,
        "pi0": current.pi0,
        "pi0_version": stamp.pi0_version if current.pi0 is not None else None,
        "threshold": stamp.threshold,
        "mature": outcome.mature,
        **verdict.columns(),
        "result": result,
        "intervals": intervals,
        "decomposition": effects.to_dict() if effects is not None else None,
        "source_version": stamp.source_version,
        "computed_at": stamp.computed_at,
        "duration_seconds": stamp.duration_seconds,
    }
    if with_sketch:  # what only raw rows give: a stored window's stay as they are
        row["sketch"] = source.sketch.to_bytes() if source.sketch is not None else None
        row["score_counts"] = (
            source.score_counts.to_bytes() if source.score_counts is not None else None
        )
        row["flagged"] = source.flagged
        row["arrivals"] = source.arrivals.to_bytes() if source.arrivals is not None else None
    if with_grid:
        grid = current.intervals.grid if current.intervals is not None else None
        row["interval_grid"] = (
            grid.to_bytes() if grid is not None and current.pi0 is not None else None
        )
    values = [
        {
            **key,
            "metric": spec.name,
            **_metric_values(spec.name, result, intervals, effects, verdict),
        }
        for spec in METRICS
    ]
    return row, values


def _without_calibration(d: dict[str, Any]) -> dict[str, Any]:
    out = dict(d)
    out["calibrated"] = dict.fromkeys(d["calibrated"])
    if "undefined" in d:
        undefined = dict(d["undefined"])
        for name in d["calibrated"]:
            undefined[f"calibrated.{name}"] = "no reference prior pi0 yet"
        out["undefined"] = undefined
        out["pi0"] = None
    return out


def _pair(intervals: Mapping[str, Any] | None, variant: str, name: str) -> tuple[Any, Any]:
    value = intervals[variant].get(name) if intervals is not None else None
    return (value[0], value[1]) if value is not None else (None, None)


def _metric_values(
    name: str,
    result: Mapping[str, Any] | None,
    intervals: Mapping[str, Any] | None,
    effects: Decomposition | None,
    verdict: StoredVerdict,
) -> dict[str, Any]:
    if result is None:
        return {
            "regular": None,
            "regular_ci_low": None,
            "regular_ci_high": None,
            "calibrated": None,
            "calibrated_ci_low": None,
            "calibrated_ci_high": None,
            "prior_effect": None,
            "performance_effect": None,
            "undefined_reason": verdict.reason or "no labelled rows",
        }
    undefined = result["undefined"]
    reg_lo, reg_hi = _pair(intervals, "regular", name)
    cal_lo, cal_hi = _pair(intervals, "calibrated", name)
    effect = effects.metrics.get(name) if effects is not None else None
    return {
        "regular": result["regular"][name],
        "regular_ci_low": reg_lo,
        "regular_ci_high": reg_hi,
        "calibrated": result["calibrated"][name],
        "calibrated_ci_low": cal_lo,
        "calibrated_ci_high": cal_hi,
        "prior_effect": effect.prior_effect if effect else None,
        "performance_effect": effect.performance_effect if effect else None,
        "undefined_reason": undefined.get(f"regular.{name}") or undefined.get(f"calibrated.{name}"),
    }
