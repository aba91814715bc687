"""A window segment's verdict: the kernel's decomposition, gated by the data it rests on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.metrics.drift import Decomposition, MetricChange, decompose, pool_baseline

if TYPE_CHECKING:
    from app.worker.evaluation import Evaluated

INSUFFICIENT = "insufficient_data"


@dataclass(frozen=True)
class Judgement:
    """The verdict stored with a window segment, and the per-metric effects behind it."""

    verdict: str
    reason: str | None
    decomposition: Decomposition | None = None
    baseline_windows: int = 0
    effects: Mapping[str, MetricChange | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The ``decomposition`` JSON column: the kernel's form plus the gate's outcome."""
        body: dict[str, Any] = (
            self.decomposition.to_dict()
            if self.decomposition is not None
            else {"verdict": self.verdict, "primary_metric": None, "reason": self.reason}
        )
        body["metrics"] = body.get("metrics", {})
        body["window_verdict"] = self.verdict
        body["window_reason"] = self.reason
        body["baseline_windows"] = self.baseline_windows
        return body


def judge(
    current: Evaluated, baseline: Sequence[Evaluated], *, gate_reason: str | None
) -> Judgement:
    """Decompose ``current`` against the pooled ``baseline``; ``gate_reason`` forces no verdict.

    The effects are kept even when the gate says the data are too thin for a verdict: they are
    still the best estimate of what moved, just not one to alert on.
    """
    usable = [b.estimate for b in baseline if b.estimate is not None]
    if current.estimate is None or current.pi0 is None or not usable:
        reason = gate_reason or (
            "no labelled rows" if current.result is None else "no usable baseline windows"
        )
        return Judgement(INSUFFICIENT, reason, baseline_windows=len(usable))
    decomposition = decompose(current.estimate, pool_baseline(usable))
    verdict = INSUFFICIENT if gate_reason else decomposition.verdict
    return Judgement(
        verdict=verdict,
        reason=gate_reason or decomposition.reason,
        decomposition=decomposition,
        baseline_windows=len(usable),
        effects=decomposition.metrics,
    )
