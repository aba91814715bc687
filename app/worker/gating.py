"""Which windows get a verdict, and which windows form the baseline (no I/O).

A verdict built on noise is an alert people learn to ignore, so a window only gets one when it has
enough labelled positives and label coverage itself, and when enough history exists before it to
say what "normal" is.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.worker.pi0 import Pi0Policy, WindowCounts


@dataclass(frozen=True)
class GateSettings:
    """The model's thresholds for trusting a window and its history."""

    min_positives: int
    min_label_coverage: float
    baseline_windows: int
    min_history_windows: int
    min_history_positives: int


def window_is_usable(w: WindowCounts, settings: GateSettings) -> bool:
    """A window solid enough to be compared or to serve in a baseline."""
    return (
        w.positives >= settings.min_positives
        and w.label_coverage is not None
        and w.label_coverage >= settings.min_label_coverage
        and w.labelled > w.positives
    )


class Baselines:
    """The baseline of each window of one segment's history (usable windows sorted once).

    With the ``reference`` pi0 policy the baseline is the reference period (the same period that
    defines pi0, so "normal" means one thing); otherwise it is the trailing ``baseline_windows``
    usable windows strictly before the window, so a slow drift is judged against the recent past.
    """

    def __init__(
        self, history: Sequence[WindowCounts], settings: GateSettings, policy: Pi0Policy
    ) -> None:
        self._usable = sorted(
            (w for w in history if window_is_usable(w, settings)), key=lambda w: w.window_start
        )
        self._starts = [w.window_start for w in self._usable]
        self._keep = settings.baseline_windows
        self._reference: list[WindowCounts] | None = None
        if policy.name == "reference" and policy.reference_start and policy.reference_end:
            start, end = policy.reference_start, policy.reference_end
            self._reference = [w for w in self._usable if start <= w.window_start < end]

    def of(self, window_start: datetime) -> list[WindowCounts]:
        """The usable windows the window at ``window_start`` is compared against."""
        if self._reference is not None:
            return list(self._reference)
        if self._keep <= 0:
            return []
        before = bisect_left(self._starts, window_start)
        return self._usable[max(0, before - self._keep) : before]


def baseline_windows(
    window_start: datetime,
    history: Sequence[WindowCounts],
    settings: GateSettings,
    policy: Pi0Policy,
) -> list[WindowCounts]:
    """The usable windows the window at ``window_start`` is compared against (see Baselines)."""
    return Baselines(history, settings, policy).of(window_start)


def insufficient_reason(
    current: WindowCounts,
    baseline: Sequence[WindowCounts],
    settings: GateSettings,
    pi0: float | None,
) -> str | None:
    """Why the window gets ``insufficient_data`` rather than a verdict; None if it may be judged."""
    if pi0 is None:
        return "no reference prior pi0 yet"
    if current.label_coverage is None or current.label_coverage < settings.min_label_coverage:
        return (
            f"label coverage {current.label_coverage or 0.0:.3f} "
            f"below {settings.min_label_coverage:.3f}"
        )
    if current.positives < settings.min_positives:
        return f"{current.positives} labelled positives, fewer than {settings.min_positives}"
    if current.labelled <= current.positives:
        return "no labelled negatives"
    if len(baseline) < settings.min_history_windows:
        return f"{len(baseline)} usable baseline windows, fewer than {settings.min_history_windows}"
    history_positives = sum(w.positives for w in baseline)
    if history_positives < settings.min_history_positives:
        return (
            f"{history_positives} baseline positives, fewer than {settings.min_history_positives}"
        )
    return None
