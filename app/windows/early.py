"""Early estimates and early evidence of a model's windows (the worker's I/O around
app/monitoring/early.py).

In the store transaction, before the drop detector: for each segment with a frozen reference, at
the model's current look (the newest window boundary at or before its clock),

1. the segment's reporting model is built from its recent windows' label arrivals (the chain
   ladder), its frozen reference's score counts and the complete windows the dispersion is read
   off;
2. every window after the reference that is not judged yet and has ended gets its early
   estimate (what its complete labels are expected to show), its alert precision from feedback
   and its early evidence, stored in ``window_metrics.early``. A window whose stored estimate was
   made from the same look, labels, pi0 and reference keeps it: within a look only the windows
   whose labels changed are estimated again;
3. the evidence steps go back to the caller, which hands them to the drop detector
   (app/windows/judging.py): it continues the judged statistic through them.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

import numpy as np

from app.db.repositories.early import EarlyRepository, RecentWindow
from app.db.repositories.monitoring import MonitoringRepository
from app.db.repositories.nowcast import NowcastRepository, ReferenceWindowCounts
from app.db.tables import MonitoredModel
from app.ingest.timestamps import datetime_to_micros, micros_to_datetime
from app.ingest.windows import floor_to_windows
from app.metrics import CurveSketch, ScoreHistogram, evaluate_sketch
from app.metrics.reporting import Arrivals
from app.metrics.tilt import binned_average_precision
from app.metrics.types import Float64Array
from app.monitoring.alerts import FrozenReference
from app.monitoring.detector import WindowIncrement
from app.monitoring.early import (
    DEVELOPMENT_WINDOWS,
    DISPERSION_WINDOWS,
    EarlyPass,
    MeasuredNow,
    ReferenceBins,
    ReportingDesign,
    SegmentReporting,
)
from app.monitoring.early_looks import Looks
from app.monitoring.early_views import (
    EarlyView,
    ScoresBeside,
    feedback_precision,
    labels_so_far,
    stored_increment,
)
from app.monitoring.maturity import MaturityRule
from app.monitoring.vocabulary import SEGMENT_ALL, WINDOW_LENGTH, Granularity
from app.windows.evaluation import seed_for
from app.windows.judging import ModelReferences
from app.windows.model_pass import ModelPass

EARLY_PER_PASS = 400
"""Windows a worker pass estimates at most (a few milliseconds each): a model of many segments
at a new look has a horizon of windows to estimate in each; the rest keep their older estimate
for a pass, and the next pass (the model's newest window re-dirtied) goes on."""
DEFAULT_DEVELOPMENT_DAYS = 120
"""How long a coverage-mode model's labels are followed (no label horizon says it): the usual
chargeback window's longest, 120 days."""


def model_looks(model: MonitoredModel, clock: datetime | None) -> Looks | None:
    """The model's current look: its windows' boundaries, at least a day apart (an hourly
    model is looked at daily), the newest at or before the model's clock."""
    if clock is None:
        return None
    granularity = cast(Granularity, model.granularity)
    unit: Granularity = "day" if granularity == "hour" else granularity
    length = WINDOW_LENGTH[unit]
    boundary = floor_to_windows(np.array([datetime_to_micros(clock)]), unit, model.timezone)
    return Looks(as_of=micros_to_datetime(int(boundary[0])), length=length)


def horizon_looks(model: MonitoredModel, looks: Looks) -> int:
    """Looks after a window's end at which its labels are complete: the label horizon, or
    :data:`DEFAULT_DEVELOPMENT_DAYS` for a model that matures by coverage."""
    days = model.label_horizon_days or DEFAULT_DEVELOPMENT_DAYS
    return max(1, math.ceil(timedelta(days=days) / looks.length))


def run_early(
    repo: EarlyRepository,
    monitoring: MonitoringRepository,
    now: ModelPass,
    references: ModelReferences,
    edges: Float64Array | None,
) -> EarlyPass:
    """Estimate the windows that need it, store the estimates, return the evidence steps and
    each segment's dispersion; ``edges``: the model's score bins (as settled by this pass)."""
    model = now.model
    nowcasts = NowcastRepository(repo.session)
    if edges is None or references.pi0 is None:
        return EarlyPass()
    threshold_bin = int(np.searchsorted(edges, model.threshold, side="right"))
    looks = model_looks(model, now.clock)
    steps: dict[str, list[WindowIncrement]] = {}
    dispersion: dict[str, float] = {}
    stored: list[dict[str, object]] = []
    # Plus one a segment: the newest window a pass re-dirties to go on loses its estimates in
    # every segment when it is recomputed, and the next pass must redo those and still get
    # further (as the nowcasts' budget, app/windows/nowcasting.py).
    budget = _Budget(EARLY_PER_PASS + len(references.frozen))
    read = nowcasts.reference_window_counts_by_segment(model.id, references.spec.version)
    for segment, at_pi0 in sorted(
        references.frozen.items(), key=lambda i: (i[0] != SEGMENT_ALL, i[0])
    ):
        segment_pass = _SegmentPass(
            model, segment, at_pi0.reference, references.pi0, looks, edges, threshold_bin
        )
        reference = segment_pass.reference_bins(repo, nowcasts, read)
        if isinstance(reference, ReferenceBins):
            dispersion[segment] = reference.dispersion()
        if looks is not None:
            steps[segment] = segment_pass.estimate(repo, now.maturity, reference, stored, budget)
    repo.store(model.id, stored)
    if budget.left <= 0:  # more than a pass may estimate: the next pass goes on
        monitoring.touch_newest_window(model.id)
    return EarlyPass(looks.as_of if looks else None, steps, dispersion)


@dataclass
class _Budget:
    """How many more windows this pass may estimate."""

    left: int


@dataclass(frozen=True)
class _SegmentPass:
    """One segment's early estimates at one look."""

    model: MonitoredModel
    segment: str
    frozen: FrozenReference
    pi0: float
    looks: Looks | None
    edges: Float64Array
    """The model's score bin edges (what its score counts are binned on)."""
    threshold_bin: int

    def estimate(
        self,
        repo: EarlyRepository,
        maturity: MaturityRule,
        reference: ReferenceBins | str,
        stored: list[dict[str, object]],
        budget: _Budget,
    ) -> list[WindowIncrement]:
        """Estimate the segment's windows not judged yet (those whose estimate is stale, as
        long as the pass's budget lasts: past it a window keeps its older estimate's step for a
        pass), add their rows to ``stored``, return every such window's evidence step, oldest
        first."""
        looks = self.looks
        assert looks is not None
        horizon = horizon_looks(self.model, looks)
        since = looks.as_of - (horizon + DEVELOPMENT_WINDOWS + 2) * looks.length
        windows = repo.windows_since(self.model.id, self.segment, since)
        pending = [
            w
            for w in windows
            if w.window_start > self.frozen.last_window
            and not w.judged
            and w.arrivals is not None
            and w.score_counts is not None
            and looks.look_of(w.window_start) >= 0
            and not maturity.is_mature(w.labels)  # judged in this pass
        ]
        reporting: SegmentReporting | str | None = None
        steps = []
        for window in pending:
            look = looks.look_of(window.window_start)
            key = self.key(window, look)
            step = stored_increment(window.early, key)
            if step is None and budget.left <= 0:
                step = stored_increment(window.early, None) or 0.0
            elif step is None:
                budget.left -= 1
                if reporting is None:
                    reporting = self.reporting(reference, windows, horizon)
                view = self.view(window, look, key, reporting, self._measured(repo, window))
                early = view.to_dict()
                stored.append(
                    {"window_start": window.window_start, "segment": self.segment, "early": early}
                )
                step = view.evidence.increment if view.evidence is not None else 0.0
            steps.append(WindowIncrement(window.window_start, step))
        return steps

    def key(self, window: RecentWindow, look: int) -> str:
        """What an estimate depends on: the look, the window's labels, pi0, the reference, and
        whether the window's scores-only estimate (shown beside it) exists yet."""
        assert self.looks is not None
        digest = hashlib.blake2b(window.arrivals or b"", digest_size=8).hexdigest()
        scores = "s" if window.nowcast is not None and "pi" in window.nowcast else "-"
        parts = (self.looks.as_of.isoformat(), look, digest, self.pi0, self.frozen.version, scores)
        return "|".join(map(str, parts))

    def reporting(
        self, reference: ReferenceBins | str, windows: list[RecentWindow], horizon: int
    ) -> SegmentReporting | str:
        """The segment's reporting model at this look, or why there is none."""
        assert self.looks is not None
        if isinstance(reference, str):
            return reference
        history = [
            (Arrivals.from_bytes(w.arrivals), self.looks.look_of(w.window_start))
            for w in windows
            if w.arrivals is not None
        ]
        design = ReportingDesign(
            pi0=self.pi0,
            drop=self.model.detection_drop,
            horizon=horizon,
            seed=seed_for(self.model.name, self.looks.as_of, self.segment, "|development"),
        )
        return SegmentReporting.build(reference, history, design)

    def reference_bins(
        self, repo: EarlyRepository, nowcasts: NowcastRepository, read: ReferenceWindowCounts
    ) -> ReferenceBins | str:
        """The frozen reference's counts and the complete windows' frauds, or why not
        (``read``: every segment's reference windows' counts, read once for the pass)."""
        parts = nowcasts.reference_window_counts(
            self.model.id, self.segment, self.frozen.version, read=read
        )
        if not parts or any(p is None for p in parts):
            return "the reference's windows have no score counts yet"
        counts = [ScoreHistogram.from_bytes(p) for p in parts if p is not None]
        calm = repo.calm_counts(
            self.model.id, self.segment, after=self.frozen.last_window, limit=DISPERSION_WINDOWS
        )
        pooled = ScoreHistogram.pooled(counts)
        frauds = pooled.positives.astype(np.float64)
        legit = (pooled.negatives + pooled.unlabelled).astype(np.float64)
        if frauds.sum() <= 0 or legit.sum() <= 0:
            return "the reference has no labelled frauds on the model's score bins"
        exact = evaluate_sketch(self.frozen.sketch, pi0=self.pi0).calibrated["average_precision"]
        binned = float(
            binned_average_precision(frauds / frauds.sum(), legit / legit.sum(), self.pi0)[0]
        )
        complete = [c.positives for c in counts] + [
            ScoreHistogram.from_bytes(c).positives for c in calm
        ]
        return ReferenceBins(
            frauds=frauds,
            legit=legit,
            window_frauds=np.stack(complete).astype(np.float64),
            ap_shift=(exact if exact is not None else binned) - binned,
            threshold_bin=self.threshold_bin,
            calm_windows=len(calm),
        )

    def _measured(self, repo: EarlyRepository, window: RecentWindow) -> MeasuredNow | None:
        """The window as its labels show it now, for a model whose evaluation counts every row
        (a label horizon): its sketch and its fraud labels per bin (None where its calibrated
        AP is undefined: no fraud labelled yet, or every row one)."""
        if self.model.label_horizon_days is None or window.arrivals is None:
            return None
        stored = repo.sketch(self.model.id, self.segment, window.window_start)
        if stored is None or window.score_counts is None:
            return None
        sketch = CurveSketch.from_bytes(stored)
        if not 0 < sketch.positives < sketch.n:
            return None
        bins = ScoreHistogram.from_bytes(window.score_counts).rows.size
        frauds = Arrivals.from_bytes(window.arrivals).frauds_per_bin(bins)
        return MeasuredNow.of(sketch, self.edges, frauds.astype(np.float64))

    def view(
        self,
        window: RecentWindow,
        look: int,
        key: str,
        reporting: SegmentReporting | str,
        measured: MeasuredNow | None,
    ) -> EarlyView:
        """The window's early estimate at ``look``."""
        assert self.looks is not None
        arrivals = Arrivals.from_bytes(window.arrivals or b"")
        rows = ScoreHistogram.from_bytes(window.score_counts or b"").rows
        flagged_bins = np.arange(rows.size) >= self.threshold_bin
        estimate, evidence, reason, scores = None, None, None, None
        if isinstance(reporting, str):
            reason = reporting
        else:
            seed = seed_for(self.model.name, window.window_start, self.segment, "|early")
            estimate = reporting.estimate(arrivals, rows, look, seed=seed, measured=measured)
            evidence = reporting.evidence(arrivals, window.window_start, look)
            scores = ScoresBeside.of(
                estimate.values["pi"], estimate.intervals["pi"], window.nowcast
            )
        return EarlyView(
            as_of=self.looks.as_of,
            look=look,
            key=key,
            labels=labels_so_far(arrivals, look),
            estimate=estimate,
            evidence=evidence,
            feedback=feedback_precision(arrivals, flagged_bins, look),
            reason=reason,
            pi0=self.pi0,
            reference_version=self.frozen.version,
            scores=scores,
        )
