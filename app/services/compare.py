"""Champion against challenger: two models scored on the same traffic, over the same period."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from app.db.repositories.window_metrics import (
    CalibratedValue,
    PeriodWindow,
    WindowMetricsRepository,
)
from app.metrics.compare import (
    Difference,
    compare_average_precision,
    window_difference_interval,
)
from app.metrics.skew import average_precision_at_skew, rank_inversion_skews
from app.schemas.analyses import (
    CompareOut,
    ComparisonOut,
    InversionOut,
    Leader,
    RangeComparisonOut,
    SidePoint,
    ValueOut,
)
from app.services.metrics import check_metric
from app.services.models import get_model
from app.services.periods import Period, load_period
from app.services.whatif import BOOTSTRAP_SEED, period_out

INVERSION_SCAN_STEP = 0.05
"""Scan spacing in logit(pi) before Algorithm 1's bisection: two flips closer than a 5% change
of the odds (a near-tie in between) may be missed; every other flip is found."""

INVERSION_TOLERANCE = 1e-9
"""Bisection stops at this width in logit(pi): each flip's pi has a relative error of ~1e-9."""


def _leader(difference: float) -> Leader:
    if difference > 0.0:
        return "challenger"
    if difference < 0.0:
        return "champion"
    return "tie"


def _comparison(pi: float | None, d: Difference) -> ComparisonOut:
    decided = d.interval is not None and (d.interval[0] > 0.0 or d.interval[1] < 0.0)
    return ComparisonOut(
        pi=pi,
        champion=d.champion,
        challenger=d.challenger,
        difference=d.difference,
        ci=d.interval,
        leader=_leader(d.difference),
        decided=decided,
    )


def _inversions(a: Period, b: Period) -> list[InversionOut]:
    """Every flip with the leaders on either side (read between flips, where no other flips)."""
    curve_a, curve_b = a.sketch.roc_points(), b.sketch.roc_points()
    skews = rank_inversion_skews(
        curve_a, curve_b, scan_step=INVERSION_SCAN_STEP, tolerance=INVERSION_TOLERANCE
    )
    # A flip past logit 36 rounds to pi = 1.0 (or 0.0): no fraud rate lies there.
    flips = [float(p) for p in skews if 0.0 < p < 1.0]
    if not flips:
        return []
    logits = [math.log(p / (1.0 - p)) for p in flips]
    probes = [logits[0] - 1.0]
    probes += [(x + y) / 2.0 for x, y in itertools.pairwise(logits)]
    probes.append(logits[-1] + 1.0)
    leaders = []
    for x in probes:
        pi = 1.0 / (1.0 + math.exp(-x))
        gap = average_precision_at_skew(curve_b, pi) - average_precision_at_skew(curve_a, pi)
        leaders.append(_leader(gap))
    return [
        InversionOut(pi=pi, below=leaders[i], above=leaders[i + 1]) for i, pi in enumerate(flips)
    ]


def _percent(pi: float) -> str:
    return f"{100.0 * pi:.3g}%"


def _history_span(period: Period) -> tuple[float, float] | None:
    """The champion's range of fraud rates (mean +- 3 std); None without a spread."""
    if len(period.windows) < 2:
        return None
    lo, hi = period.history_range()
    # Windows with one and the same fraud rate leave a spread of rounding error only.
    return (lo, hi) if hi > lo * (1.0 + 1e-9) else None


def _summary(
    inversions: list[InversionOut], current: ComparisonOut, ranged: RangeComparisonOut | None
) -> str:
    if not inversions and current.leader == "tie":
        # No flip and no lead now: the curves touch here without crossing (or are one curve).
        order = (
            "Neither model has the higher average precision now, and no fraud rate flips the order"
        )
    elif not inversions:
        # With no flip one model leads at every fraud rate: the one leading now.
        order = f"The {current.leader} has the higher average precision at every fraud rate"
    else:
        parts = [f"the {inversions[0].below} leads below {_percent(inversions[0].pi)}"]
        parts += [
            f"the {inv.below} between {_percent(prev.pi)} and {_percent(inv.pi)}"
            for prev, inv in itertools.pairwise(inversions)
        ]
        parts.append(f"the {inversions[-1].above} above {_percent(inversions[-1].pi)}")
        order = "By average precision " + ", ".join(parts)
    assert current.pi is not None
    if current.leader == "tie":
        lead = f"at the current fraud rate {_percent(current.pi)} the two models tie"
    else:
        lead = (
            f"at the current fraud rate {_percent(current.pi)} the {current.leader} leads by "
            f"{abs(current.difference):.4f}"
        )
    if current.ci is not None:
        low, high = current.ci
        certainty = "decided" if current.decided else "not decided: the interval holds 0"
        lead += f" (challenger - champion: 95% interval {low:+.4f} to {high:+.4f}, {certainty})"
    if ranged is None:
        return f"{order}; {lead}."
    span = f"over the history's range {_percent(ranged.pi_lo)} to {_percent(ranged.pi_hi)}"
    if ranged.flips_inside:
        flips = ", ".join(_percent(p) for p in ranged.flips_inside)
        verdict = f"{span} neither leads throughout (the order flips at {flips})"
    else:
        certainty = "decided" if ranged.decided else "not decided"
        if ranged.leader == "tie":
            verdict = f"{span} neither model leads ({certainty})"
        else:
            verdict = f"{span} the {ranged.leader} leads throughout ({certainty})"
    return f"{order}; {lead}; {verdict}."


@dataclass(frozen=True)
class _Side:
    """One model's stored window in the side-by-side series."""

    window: PeriodWindow
    value: CalibratedValue | None

    def out(self) -> ValueOut:
        v = self.value
        if v is None:
            return ValueOut(value=None, reason="not computed")
        ci = (
            (v.calibrated_ci_low, v.calibrated_ci_high)
            if v.calibrated_ci_low is not None and v.calibrated_ci_high is not None
            else None
        )
        return ValueOut(value=v.calibrated, ci=ci, reason=v.undefined_reason)


def _sides(session: Session, period: Period, metric: str) -> dict[datetime, _Side]:
    repository = WindowMetricsRepository(session)
    first, last = period.windows[0].window_start, period.windows[-1].window_start
    values = {
        v.window_start: v
        for v in repository.calibrated_values(period.model.id, period.segment, metric, first, last)
    }
    return {w.window_start: _Side(w, values.get(w.window_start)) for w in period.windows}


def _side_series(
    champion: dict[datetime, _Side], challenger: dict[datetime, _Side]
) -> list[SidePoint]:
    """Both models' calibrated values per window; their difference (with an interval) where
    both are at one pi0."""
    out = []
    for start in sorted(set(champion) | set(challenger)):
        a, b = champion.get(start), challenger.get(start)
        difference = None
        difference_ci = None
        if a is not None and b is not None and a.window.pi0 == b.window.pi0:
            va, vb = a.out(), b.out()
            if va.value is not None and vb.value is not None:
                difference = vb.value - va.value
                if va.ci is not None and vb.ci is not None:
                    difference_ci = window_difference_interval(va.value, va.ci, vb.value, vb.ci)
        either = a if a is not None else b
        assert either is not None
        missing = ValueOut(value=None, reason="no mature window")
        out.append(
            SidePoint(
                window_start=start,
                pi=either.window.pi,
                champion=a.out() if a is not None else missing,
                challenger=b.out() if b is not None else missing,
                difference=difference,
                difference_ci=difference_ci,
                decided=(
                    difference_ci[0] > 0.0 or difference_ci[1] < 0.0
                    if difference_ci is not None
                    else None
                ),
            )
        )
    return out


def compare(
    session: Session,
    champion: str,
    challenger: str,
    *,
    segment: str,
    start: datetime | None,
    end: datetime | None,
    metric: str,
    replicates: int,
) -> CompareOut:
    """Champion vs challenger over [start, end): side-by-side series, AP at pi0, at the current
    fraud rate and over the champion's history range, and every rank inversion."""
    check_metric(metric)
    a = load_period(session, get_model(session, champion), segment, start, end)
    b = load_period(session, get_model(session, challenger), segment, start, end)
    priors = [a.current_pi] + ([a.pi0] if a.pi0 is not None else [])
    span = _history_span(a)
    at, ranged = compare_average_precision(
        a.sketch, b.sketch, priors, pi_range=span, seed=BOOTSTRAP_SEED, replicates=replicates
    )
    inversions = _inversions(a, b)
    current = _comparison(a.current_pi, at[0])
    over_range = None
    if span is not None and ranged is not None:
        over_range = RangeComparisonOut(
            **_comparison(None, ranged).model_dump(),
            pi_lo=span[0],
            pi_hi=span[1],
            flips_inside=[inv.pi for inv in inversions if span[0] < inv.pi < span[1]],
        )
    return CompareOut(
        champion=a.model.name,
        challenger=b.model.name,
        metric=metric,
        pi0=a.pi0,
        champion_period=period_out(a),
        challenger_period=period_out(b),
        series=_side_series(_sides(session, a, metric), _sides(session, b, metric)),
        at_pi0=_comparison(a.pi0, at[1]) if a.pi0 is not None else None,
        at_current_pi=current,
        over_range=over_range,
        inversions=inversions,
        summary=_summary(inversions, current, over_range),
    )
