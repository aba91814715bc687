"""The reference prior pi0 of a model: policy math on per-window label counts (no I/O).

pi0 is the prior every calibrated metric of a model is expressed at. One value holds for the whole
displayed series; it is versioned, and a new version is only cut when the estimate moves by more
than a relative tolerance, so a long history does not churn on every new window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from app.monitoring.vocabulary import Pi0PolicyName


@dataclass(frozen=True)
class WindowLabels:
    """Label counts of one window segment: what pi0, maturity and the reference are chosen on."""

    window_start: datetime
    labelled: int
    positives: int
    label_coverage: float | None

    @property
    def negatives(self) -> int:
        """Labelled negatives."""
        return self.labelled - self.positives


@dataclass(frozen=True)
class Pi0Policy:
    """How a model's pi0 is chosen (columns of the ``models`` table)."""

    name: Pi0PolicyName
    lookback_windows: int | None = None
    reference_start: datetime | None = None
    reference_end: datetime | None = None
    fixed: float | None = None
    mature: Callable[[WindowLabels], bool] | None = None
    """Which windows' labels are complete enough to inform pi0 (app/monitoring/maturity.py's
    rule); None takes every labelled window."""


@dataclass(frozen=True)
class Pi0Estimate:
    """A candidate pi0 and the history it came from; ``value`` is None when there is none."""

    value: float | None
    policy: Pi0PolicyName
    windows_used: int
    rows_used: int
    positives_used: int
    reason: str | None = None


def usable_windows(policy: Pi0Policy, history: Sequence[WindowLabels]) -> list[WindowLabels]:
    """Windows that may inform pi0: mature, and inside the policy's range.

    Immature windows are left out because their labelled rows are the early-labelled ones,
    which in fraud are biased towards positives (chargebacks arrive first).
    """
    ordered = sorted(history, key=lambda w: w.window_start)
    mature = policy.mature
    covered = [w for w in ordered if w.labelled > 0 and (mature is None or mature(w))]
    if policy.name == "reference":
        start, end = policy.reference_start, policy.reference_end
        return [
            w
            for w in covered
            if (start is None or w.window_start >= start) and (end is None or w.window_start < end)
        ]
    if policy.name == "historical" and policy.lookback_windows:
        return covered[-policy.lookback_windows :]
    return covered


def estimate_pi0(policy: Pi0Policy, history: Sequence[WindowLabels]) -> Pi0Estimate:
    """Estimate pi0 under ``policy`` from the windows' label counts.

    ``historical`` and ``reference`` use the count-weighted mean (sum of positives over sum of
    labelled rows), not the mean of per-window ratios, so a quiet day weighs what its rows weigh.
    """
    if policy.name == "fixed":
        if policy.fixed is None or not 0.0 < policy.fixed < 1.0:
            return Pi0Estimate(None, "fixed", 0, 0, 0, "fixed pi0 is not configured in (0, 1)")
        return Pi0Estimate(policy.fixed, "fixed", 0, 0, 0)
    used = usable_windows(policy, history)
    rows = sum(w.labelled for w in used)
    positives = sum(w.positives for w in used)
    if rows == 0:
        return Pi0Estimate(None, policy.name, 0, 0, 0, "no mature labelled window")
    if positives in (0, rows):
        reason = "history has no positives" if positives == 0 else "history has no negatives"
        return Pi0Estimate(None, policy.name, len(used), rows, positives, reason)
    return Pi0Estimate(positives / rows, policy.name, len(used), rows, positives)


def needs_new_version(current: float | None, candidate: float | None, tolerance: float) -> bool:
    """Whether ``candidate`` replaces ``current``: a first value, or a move past tolerance."""
    if candidate is None:
        return False
    if current is None:
        return True
    return abs(candidate - current) > tolerance * current


@dataclass(frozen=True)
class CurrentPi0:
    """The version a model's series is at now (what :func:`next_version` compares with)."""

    value: float
    policy: Pi0PolicyName


def next_version(
    policy: Pi0Policy,
    history: Sequence[WindowLabels],
    current: CurrentPi0 | None,
    tolerance: float,
) -> Pi0Estimate | None:
    """The estimate to cut as a new pi0 version, or None if the current one stands.

    A new version is cut on the first estimate, on a policy change (or a new fixed value), and
    when the estimate moves by more than ``tolerance`` relative to the current one.
    """
    estimate = estimate_pi0(policy, history)
    if estimate.value is None:
        return None
    new_fixed = policy.name == "fixed" and current is not None and current.value != estimate.value
    changed_policy = current is not None and (current.policy != policy.name or new_fixed)
    if changed_policy or needs_new_version(
        current.value if current is not None else None, estimate.value, tolerance
    ):
        return estimate
    return None
