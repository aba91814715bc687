"""What `calmon demo` prints: the live nights, when the page came and what it rested on, and
the newest days' early estimates beside what their scores alone say and what their complete
labels will show (the demo made the labels, so it knows; calmon does not)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np

from app.demo.feed import Night
from app.demo.stream import CHARGEBACK, FEEDBACK, THRESHOLD, DemoDay, StreamPlan, midnight
from app.metrics import evaluate

_NIGHT = "  {day:<10} {mark} {feedback:>9} {chargebacks:>12}  {state:<5} {evidence:>14}  {signals}"
_NEWEST = (
    "  {day:<10} {mark} {labels:>6}  {ap:>17}  {ap_final:>5}  {precision:>5} {precision_scores:>6}"
    " {precision_final:>5}  {pi:>6} {pi_scores:>6} {pi_final:>6}"
)
# The newest days' table has two header lines: what each group of columns estimates, then
# where each column's value comes from. One row per column: (field, first line, second line).
_NEWEST_COLUMNS = (
    ("day", "", "day"),
    ("mark", " ", " "),
    ("labels", "labels", "so far"),
    ("ap", "calibrated AP", "early [95%]"),
    ("ap_final", "", "final"),
    ("precision", "", "early"),
    ("precision_scores", "precision", "scores"),
    ("precision_final", "", "final"),
    ("pi", "", "early"),
    ("pi_scores", "fraud rate", "scores"),
    ("pi_final", "", "final"),
)
_NEWEST_HEADER = (
    _NEWEST.format(**{field: first for field, first, _ in _NEWEST_COLUMNS}).rstrip(),
    _NEWEST.format(**{field: second for field, _, second in _NEWEST_COLUMNS}),
)


def night_header(plan: StreamPlan) -> list[str]:
    """The live table's title and header."""
    return [
        "live, a night at a time: each day's predictions once it ends, and the labels that came",
        f"in during it (* the model degraded from {plan.onset.isoformat()} on; drop evidence: "
        "judged and early)",
        _NIGHT.format(
            day="day",
            mark=" ",
            feedback="feedback",
            chargebacks="chargebacks",
            state="alert",
            evidence="drop evidence",
            signals="signals",
        ),
    ]


def night_line(night: Night, plan: StreamPlan) -> str:
    """One live night's line: the continued drop statistic (judged windows and early
    evidence) against the threshold it pages above."""
    alert = night.alert
    evidence = (alert.get("early") or {}).get("drop_evidence", alert["drop_evidence"])
    return _NIGHT.format(
        day=night.day.day.isoformat(),
        mark="*" if night.day.day >= plan.onset else " ",
        feedback=f"{night.feedback:,}",
        chargebacks=f"{night.chargebacks:,}",
        state=alert["state"],
        evidence=f"{evidence:.1f} of {alert['threshold']:.3g}",
        signals=", ".join(night.signals) or "-",
    )


def verdict_counts(points: list[dict[str, Any]]) -> str:
    """``verdict count, ...`` of a series, by name."""
    counts = Counter(p["verdict"] for p in points)
    return ", ".join(f"{verdict} {count}" for verdict, count in sorted(counts.items()))


@dataclass(frozen=True)
class Page:
    """The first night that paged after the onset, and what it rested on."""

    night: Night
    plan: StreamPlan
    stream: list[DemoDay]

    def lines(self) -> list[str]:
        """The sentences that say it."""
        onset, horizon = self.plan.onset, self.plan.feed.horizon_days
        delay = (self.night.night - midnight(onset)).days
        broken = [d for d in self.stream if onset <= d.day < self.night.night.date()]
        came = Counter[str]()
        total = Counter[str]()
        for day in broken:
            arrived = day.labels_by(self.night.night)
            for source, label, counted in zip(day.source, day.label, arrived, strict=True):
                if source is not None and label == 1:
                    total[source] += 1
                    came[source] += int(counted)
        signal = "early evidence" if "early" in self.night.signals else "judged windows"
        matures = onset + timedelta(days=1 + horizon)
        return [
            f"paged {delay} days after the model degraded ({onset.isoformat()}), on {signal}: "
            f"the fraud labels",
            f"  of its first {len(broken)} days so far, {came[FEEDBACK]:,} from feedback and "
            f"{came[CHARGEBACK]:,} chargebacks (of the {total[CHARGEBACK]:,} those days will get);",
            f"  they mature from {matures.isoformat()} (label_horizon_days {horizon}), and only "
            "then are they judged",
        ]


def newest_table(
    windows: list[dict[str, Any]],
    stream: list[DemoDay],
    plan: StreamPlan,
    reference: float | None,
) -> list[str]:
    """The newest days' estimates (``windows``: their ``GET .../windows/{start}`` answers;
    ``reference``: the reference's calibrated AP)."""
    by_day = {d.day: d for d in stream}
    lines = [
        "the newest days after the last night, their labels still arriving (reference "
        f"calibrated AP {_number(reference)}):",
        *_NEWEST_HEADER,
    ]
    for window in windows:
        day = by_day[date.fromisoformat(window["window_start"][:10])]
        early = window.get("early") or {}
        nowcast = window.get("nowcast") or {}
        so_far = early.get("labels_so_far") or {}
        ap = early.get("average_precision") or {}
        final_pi, final_precision = day.eventual()
        lines.append(
            _NEWEST.format(
                day=day.day.isoformat(),
                mark="*" if day.day >= plan.onset else " ",
                labels=f"{so_far.get('frauds', 0) + so_far.get('legitimate', 0):,}",
                ap=f"{_number(ap.get('value'))} {_interval(ap.get('ci'))}",
                ap_final=_number(_final_ap(day, window.get("pi0"))),
                precision=_number(_value(early, "precision")),
                precision_scores=_number(_value(nowcast.get("expected") or {}, "precision")),
                precision_final=_number(final_precision),
                pi=_percent(_value(early, "pi")),
                pi_scores=_percent(nowcast.get("pi")),
                pi_final=_percent(final_pi),
            )
        )
    return [
        *lines,
        "  early: from the labels so far, scaled up by how complete the recent days' labels were",
        "    at the same age; scores: from the scores alone, as if only the fraud rate had moved;",
        "    final: what the complete labels will show (the demo made them up, so it knows)",
    ]


def _value(estimates: dict[str, Any], name: str) -> float | None:
    value = (estimates.get(name) or {}).get("value")
    return float(value) if value is not None else None


def _final_ap(day: DemoDay, pi0: float | None) -> float | None:
    """The calibrated AP the day's complete labels will show: never-reported frauds and
    unlabelled rows count as legitimate, as calmon counts them at the label horizon."""
    if pi0 is None:
        return None
    labels = (day.label == 1).astype(np.int8)
    value = evaluate(day.scores, labels, threshold=THRESHOLD, pi0=pi0).calibrated.get(
        "average_precision"
    )
    return float(value) if value is not None else None


def _number(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


def _percent(value: float | None) -> str:
    return f"{100 * value:.2f}%" if value is not None else "-"


def _interval(ci: list[float] | None) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else " " * 12
