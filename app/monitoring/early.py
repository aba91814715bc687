"""Before a window's labels are complete: what they will show, and early evidence of a drop.

A fraud team's labels arrive over weeks (app/metrics/reporting.py): investigators' feedback on
the alerts they reviewed the next day, chargebacks for the frauds nobody reviewed over days to
weeks. This module decides what calmon does with a window's labels so far:

* **When it looks** (app/monitoring/early_looks.py): a window is estimated at *looks*, the
  window boundaries after its end on the model's clock; a label counts from the first look
  after its ``labelled_at``.
* **Cells.** Labels arrive at one speed within a cell: the bins above the threshold (flagged:
  feedback) and below it (missed: chargebacks only), each side split in two at its reference
  frauds' median (investigators work the queue from the top; high-scoring misses may be
  disputed sooner) (:func:`reporting_cells`).
* **Estimates** (:meth:`SegmentReporting.estimate`): the window's eventual fraud rate, precision
  and recall at the threshold and calibrated AP at pi0, each with an interval, scaled up from
  its labels so far by the completeness the segment's recent windows show (chain ladder on the
  newest :data:`DEVELOPMENT_WINDOWS` windows old enough at each look: reporting that speeds up
  or slows down is followed within weeks, windows that reported unlike one another widen
  every interval through the bootstrap over windows, and where the newer half of those windows
  reports unlike the older half beyond chance the intervals widen by that difference).
* **Evidence** (:meth:`SegmentReporting.evidence`): the log-likelihood ratio of where the
  window's labelled frauds score, given how many arrived and how complete each cell is, under
  the model setting ``detection_drop`` (the reference's fraud scores tilted down until the
  calibrated AP fell that much) against no drop. It ignores the fraud rate (the count is given)
  and the mere fact that flagged frauds arrive first (the completeness is given). Three
  allowances keep it honest: "no drop" is taken :data:`NULL_MARGIN` standard errors of the
  reference's own tilt below the reference (a reference whose frauds happened to score high
  must not make every window look worse), or below where the calm judged windows sat if that
  is lower (:meth:`ReferenceBins.calm_tilt`); the completeness is not taken as known but
  integrated out, each hypothesis' likelihood averaged over the chain ladder's bootstrap
  replicates (at early looks F rests on a handful of chargebacks, and more chargebacks than an
  underestimated F expects would otherwise look like a drop); and the ratio is divided by the
  *dispersion* of the reference windows' frauds (frauds in bursts from one
  card or terminal score alike and are disputed together: a quasi-likelihood, as outbreak
  detection on overdispersed counts does, Farrington et al. 1996).
* **The early detector** (``continue_detector`` in app/monitoring/detector.py): the segment's
  drop CUSUM after its newest judged window, continued through the windows
  not judged yet with their early evidence, in time order. Under "no drop" every increment's
  exponential has expectation at most one, so at each look the continued statistic exceeds the
  threshold with probability at most exp(-threshold) (Ville's inequality, read backwards from
  the newest window): the false-page budget per window and segment stays exp(-10). A page it
  raises says ``early``; as the windows mature their final evidence takes over the same
  statistic, so the page goes on (signal ``cusum``) without clearing and re-raising.
* **Alert precision from feedback** (app/monitoring/early_views.py): the share of the
  reviewed alerts the investigators confirmed, the day after. It is kept apart: feedback covers
  flagged rows only, so it says nothing about the frauds the model missed and enters no other
  metric.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from app.metrics.development import Development, develop
from app.metrics.early_estimate import (
    EarlyEstimate,
    EstimateSettings,
    LabelsSoFar,
    carried_on,
    estimate_window,
)
from app.metrics.null_model import grouped_calibrated_ap
from app.metrics.reporting import Arrivals, Cells
from app.metrics.sketch import CurveSketch
from app.metrics.tilt import (
    TiltEvidence,
    TiltTest,
    binned_average_precision,
    binormal_axis,
    dispersion,
    tilt_for_drop,
)
from app.metrics.types import Float64Array, Int64Array
from app.monitoring.detector import WindowIncrement

VAGUE_ODDS = 0.1
"""The odds, before its labels, that a window's cell holds a share of its frauds unlike the
reference's (a model that broke), against the reference's split: low, since a healthy model
keeps its split, and the labels raise them as they arrive (app/metrics/early_estimate.py::
_prior_rates; measured in bench/early_pages.py: at even odds a healthy 25-fraud window's fraud
rate read the day after was 65% off on average, at 0.1 23%, while the demo's broken days read
within 20% of their complete labels from two looks on)."""
SHAPE_STRENGTH = 20.0
"""Pseudo-frauds with which the reference's shape places a cell's hidden frauds in its bins."""
DEVELOPMENT_WINDOWS = 28
"""Windows each development factor is taken over (the newest old enough): four weeks of daily
windows follow a change of reporting speed within about a month, with enough frauds to be
precise at 25 frauds a window."""
DEVELOPMENT_REPLICATES = 200
"""Bootstrap replicates of the completeness (and draws of each estimate's interval)."""
NULL_MARGIN = 1.0
""""No drop" is taken this many standard errors of the reference's tilt below the reference,
the benefit of the doubt the judged detector gives (REFERENCE_SIGMAS): a reference whose frauds
happened to score high must not make every later window look worse. The continued statistic
adds up to a horizon of windows (60 at daily windows), so a bias that one window would not
show adds up there: at a quarter of a standard error, 3 of 10 bench streams at 25 frauds a
window paged falsely on prior drift (bench/early_pages.py)."""
FRAUD_SMOOTHING = 1.0
"""Pseudo-frauds spread like the legitimate rows over the reference's bins: a fraud in a bin
where the reference had none is unlikely, not impossible."""
DISPERSION_WINDOWS = 90
"""The dispersion is read off the reference's windows and up to this many of the newest judged
windows that did not page: with the reference's 14 windows alone its estimate's noise (a
standard deviation of 0.4 around 1 for independent frauds) slowed detection by a window in
two streams of five (bench/early_pages.py)."""
SPLIT_MIN_BINS = 2
"""A side of the threshold is split in two cells only if it has at least this many bins."""


def reporting_cells(
    threshold_bin: int, fraud_counts: Float64Array, legit_counts: Float64Array
) -> Cells:
    """The cells of a model's bins (bins from ``threshold_bin`` on are flagged) and the
    reference's fraud shares, smoothed by :data:`FRAUD_SMOOTHING`."""
    bins = fraud_counts.size
    legit = legit_counts / max(float(legit_counts.sum()), 1.0)
    shares = (fraud_counts + FRAUD_SMOOTHING * legit) / (fraud_counts.sum() + FRAUD_SMOOTHING)
    flagged = np.arange(bins) >= threshold_bin
    of_bin = np.zeros(bins, dtype=np.int64)
    cell = 0
    for side in (~flagged, flagged):
        members = np.flatnonzero(side)
        if not members.size:
            continue
        if members.size < SPLIT_MIN_BINS:
            of_bin[members] = cell
            cell += 1
            continue
        cumulative = np.cumsum(shares[members])
        upper = (cumulative > cumulative[-1] / 2.0).astype(np.int64)
        upper[-1] = 1  # the top bin always opens the upper cell, so both cells have bins
        upper[0] = 0
        of_bin[members] = cell + upper
        cell += 2
    return Cells(of_bin=of_bin, flagged=flagged, reference_shares=shares)


@dataclass(frozen=True)
class ReferenceBins:
    """What the early test and estimates need of a segment's frozen reference: its frauds and
    legitimate rows per bin (pooled), complete windows' frauds per bin in time order (the
    reference's, then the newest judged windows that did not page: what the dispersion is read
    off), and its exact
    and binned calibrated AP's difference at pi0 (binning ties a bin's rows)."""

    frauds: Float64Array
    legit: Float64Array
    window_frauds: Float64Array
    ap_shift: float
    threshold_bin: int
    """The first flagged bin (the threshold is one of the model's bin edges)."""
    calm_windows: int = 0
    """How many of ``window_frauds``' last rows are judged windows that did not page."""

    def calm_tilt(self, shares: Float64Array, axis: Float64Array, bursts: float) -> float | None:
        """Where the judged windows that did not page sit against the reference, as a tilt
        less its standard error (their frauds counted in bursts): the lowest "no drop" they
        vouch for; None without them. What the judged detector accepted as no drop, the early
        test must not count as one."""
        if self.calm_windows <= 0:
            return None
        calm = self.window_frauds[-self.calm_windows :].sum(axis=0)
        n = float(calm.sum())
        mean = float((shares * axis).sum())
        variance = float((shares * (axis - mean) ** 2).sum())
        if n <= 0 or variance <= 0:
            return None
        shift = float((calm * axis).sum()) / n - mean
        return shift / variance - NULL_MARGIN * math.sqrt(bursts / (n * variance))

    def dispersion(self) -> float:
        """How much burstier than independent frauds the complete windows' frauds are (never
        under 1): what the early and the judged evidence are divided by."""
        cells = reporting_cells(self.threshold_bin, self.frauds, self.legit)
        axis = binormal_axis(self.legit)
        return max(1.0, dispersion(self.window_frauds, cells.reference_shares, axis))


@dataclass(frozen=True)
class ReportingDesign:
    """The model's side of a segment's reporting model: the prior calibrated metrics are
    expressed at, the design drop (``detection_drop``), the label horizon in looks (a window's
    labels are complete that many looks after its end) and the bootstrap's seed."""

    pi0: float
    drop: float
    horizon: int
    seed: int


@dataclass(frozen=True)
class MeasuredNow:
    """A window as its labels show it now, for a model with a label horizon (every row lacking
    a fraud label counted legitimate): its stored sketch, the score bin of each of the
    sketch's entries, and its fraud labels per bin."""

    sketch: CurveSketch
    entry_bins: Int64Array
    frauds: Float64Array

    @classmethod
    def of(cls, sketch: CurveSketch, edges: Float64Array, frauds: Float64Array) -> MeasuredNow:
        """The window's sketch binned on the model's score ``edges`` (a score lies in the bin
        ``searchsorted(edges, score, side="right")``, as the score counts bin it)."""
        bins = np.searchsorted(edges, sketch.scores, side="right").astype(np.int64)
        return cls(sketch, bins, frauds)

    def ap_shift(self, rows: Int64Array, pi0: float, completeness: Float64Array) -> float:
        """Exact minus binned calibrated AP of the window as its complete labels will show it.

        Binning ties a bin's rows, and what that costs depends on where inside its bins the
        window's frauds fall, so the correction is read off the window itself. But only a
        share ``completeness`` (per bin) of its frauds is labelled yet, more of the flagged
        than of the missed, so each fraud labelled so far stands for 1/F of its bin's, at its
        own score, in the exact AP and the binned alike. Read off the labels as they are (every
        fraud worth one), the correction overweighted the flagged bins: a week after a drop at
        1,000 frauds a window it read 0.0055 too high against a standard deviation of the
        estimate of 0.010, and the AP interval covered 86.2%; weighted, 0.0003 too low and
        92.4% (bench/early_pages.py, 30 streams).
        """
        frauds = np.minimum(self.frauds, rows)
        if frauds.sum() <= 0 or (rows - frauds).sum() <= 0:
            return 0.0
        # A bin never holds more frauds than rows.
        weight = np.minimum(
            np.divide(1.0, completeness, out=np.ones_like(completeness), where=completeness > 0),
            np.divide(rows, frauds, out=np.ones_like(frauds), where=frauds > 0),
        )
        scaled = frauds * weight
        # The hidden frauds are among the rows counted legitimate now: each bin's legitimate
        # rows are thinned by them, evenly within the bin (at a bin just below the threshold
        # a third of the rows may be frauds still to be disputed).
        legit = rows - scaled
        thinning = np.divide(legit, rows - frauds, out=np.ones_like(legit), where=rows > frauds)
        sketch, at = self.sketch, self.entry_bins
        hits = sketch.positives_at.astype(np.float64) * weight[at]
        false = (sketch.negatives_between + sketch.negatives_tied) * thinning[at]
        negatives = float(false.sum()) + sketch.negatives_below * float(thinning[0])
        exact = float(grouped_calibrated_ap(hits[None, :], false[None, :], negatives, pi0)[0])
        binned = float(binned_average_precision(scaled / scaled.sum(), legit / legit.sum(), pi0)[0])
        return exact - binned


@dataclass(frozen=True)
class EarlyEvidence:
    """One window's early evidence about a drop, as the continued CUSUM weighs it."""

    window_start: datetime
    look: int
    tilt: TiltEvidence
    dispersion: float

    @property
    def increment(self) -> float:
        """The CUSUM's step: the log-likelihood ratio over the dispersion."""
        return self.tilt.log_likelihood_ratio / self.dispersion

    @property
    def step(self) -> WindowIncrement:
        """The window's step, as the continuation reads it."""
        return WindowIncrement(self.window_start, self.increment)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "look": self.look,
            **self.tilt.to_dict(),
            "dispersion": self.dispersion,
            "increment": self.increment,
        }


@dataclass(frozen=True)
class SegmentReporting:
    """A segment's reporting model at one look: cells, completeness, the early test."""

    cells: Cells
    development: Development
    test: TiltTest
    dispersion: float
    settings: EstimateSettings
    integrate_completeness: bool = True
    """Average the test over F's replicates (False: take its estimate as known, the bench's
    best-possible detector)."""

    @classmethod
    def build(
        cls,
        reference: ReferenceBins,
        history: Sequence[tuple[Arrivals, int]],
        design: ReportingDesign,
    ) -> SegmentReporting | str:
        """The model, or why there is none yet. ``history``: the segment's windows (oldest
        first) with their looks (windows with labels of unknown time are left out)."""
        pi0, drop, seed = design.pi0, design.drop, design.seed
        if reference.frauds.sum() <= 0 or reference.legit.sum() <= 0:
            return "the reference has no labelled frauds on the model's score bins"
        usable = [(a, look) for a, look in history if look >= 1 and a.unknown_times == 0]
        if not usable:
            return "no window with label times has been seen a full window length after its end"
        cells = reporting_cells(reference.threshold_bin, reference.frauds, reference.legit)
        horizon = min(max(look for _, look in usable), design.horizon)
        cumulative = np.stack([a.cumulative(cells.of_bin, cells.count, horizon) for a, _ in usable])
        development = develop(
            cumulative,
            [look for _, look in usable],
            recent=DEVELOPMENT_WINDOWS,
            replicates=DEVELOPMENT_REPLICATES,
            seed=seed,
        )
        legit_shares = reference.legit / reference.legit.sum()
        axis = binormal_axis(reference.legit)
        shares = cells.reference_shares
        drop_tilt = tilt_for_drop(shares, legit_shares, axis, pi0=pi0, drop=drop)
        mean = float((shares * axis).sum())
        information = float(reference.frauds.sum()) * float((shares * (axis - mean) ** 2).sum())
        null_tilt = -NULL_MARGIN / math.sqrt(information) if information > 0 else 0.0
        bursts = reference.dispersion()
        calm = reference.calm_tilt(shares, axis, bursts)
        if calm is not None:
            # A reference whose frauds came in bursts that scored high made every later window
            # look worse (bench/early_pages: healthy bursty streams of 100 frauds a window paged
            # falsely); "no drop" is also where the calm judged windows sat. Never past half the
            # design drop: the test keeps its two hypotheses apart.
            null_tilt = max(min(null_tilt, calm), drop_tilt / 2.0)
        return cls(
            cells=cells,
            development=development,
            test=TiltTest(shares, axis, null_tilt, drop_tilt),
            dispersion=bursts,
            settings=EstimateSettings(
                pi0=pi0,
                ap_shift=reference.ap_shift,
                vague_odds=VAGUE_ODDS,
                shape_strength=SHAPE_STRENGTH,
                dispersion=bursts,
            ),
        )

    def estimate(
        self,
        arrivals: Arrivals,
        rows: Int64Array,
        look: int,
        *,
        seed: int,
        measured: MeasuredNow | None = None,
    ) -> EarlyEstimate:
        """What the window's complete labels are expected to show, from those by ``look``.

        ``measured``: the window as its labels show it now (its sketch with every row without
        a fraud label counted legitimate, and its fraud labels per bin). The binned AP ties a
        bin's rows, and how much that costs depends on where the window's frauds fall; the
        window's own exact-minus-binned AP (:meth:`MeasuredNow.ap_shift`, its labels so far
        scaled up by the same completeness) corrects the estimate where the reference's would
        be off (a model that got worse: measured on the bench, the reference's correction left
        AP biased by its own standard error when labels were nearly complete).
        """
        labels = LabelsSoFar.of(np.minimum(arrivals.frauds_per_bin(rows.size, look), rows), rows)
        completeness = self.development.at(look)
        settings = self.settings
        if measured is not None:
            per_bin = carried_on(completeness)[0][self.cells.of_bin]
            settings = replace(settings, ap_shift=measured.ap_shift(rows, settings.pi0, per_bin))
        return estimate_window(labels, self.cells, completeness, settings, seed=seed)

    def evidence(self, arrivals: Arrivals, window_start: datetime, look: int) -> EarlyEvidence:
        """The window's early evidence at ``look``: the test's likelihoods averaged over the
        completeness' bootstrap replicates (F integrated out, not taken as known)."""
        completeness = self.development.at(look)
        rows = completeness.replicates if self.integrate_completeness else completeness.value
        per_bin = np.atleast_2d(rows)[:, self.cells.of_bin]
        observed = arrivals.frauds_per_bin(self.cells.of_bin.size, look)
        tilt = self.test.evidence(observed, per_bin)
        return EarlyEvidence(window_start, look, tilt, self.dispersion)


@dataclass(frozen=True)
class EarlyPass:
    """What a worker pass found: its look, and per segment the evidence steps of the windows not
    judged yet, oldest first (what the drop detector continues through)."""

    as_of: datetime | None = None
    steps: dict[str, list[WindowIncrement]] = field(default_factory=dict)
    dispersion: dict[str, float] = field(default_factory=dict)
    """Per segment, how much burstier than independent frauds its complete windows are (the
    judged detector divides its steps by it too)."""
