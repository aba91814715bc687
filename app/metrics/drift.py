"""Drift decomposition: how much of a metric's change is the prior, how much the model.

For a metric M with calibrated variant Mc, a window t and a reference R (both at the same pi0):

* performance effect = Mc(t) - Mc(R)                    (model quality, at the fixed prior pi0)
* prior effect       = (M(t) - Mc(t)) - (M(R) - Mc(R))  (explained by pi(t) != pi(R))
* total              = M(t) - M(R) = prior effect + performance effect (the prior effect is
  computed as total - performance effect, so the two add up exactly).

This is arithmetic on point values; whether a change is noise or a drop is decided elsewhere
(app/monitoring: the drop detector weighs each window against the sampling distribution it
would have if nothing had changed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from app.metrics.errors import InvalidInputError
from app.metrics.registry import METRICS

Values = Mapping[str, float | None]


@dataclass(frozen=True)
class Effects:
    """One metric's change from the reference, split into prior and performance effects."""

    total: float
    prior_effect: float
    performance_effect: float

    def to_dict(self) -> dict[str, float]:
        """JSON form."""
        return {
            "total": self.total,
            "prior_effect": self.prior_effect,
            "performance_effect": self.performance_effect,
        }


@dataclass(frozen=True)
class Decomposition:
    """Per-metric effects of a window against a reference (None where a value is undefined)."""

    metrics: Mapping[str, Effects | None]

    def to_dict(self) -> dict[str, Any]:
        """JSON form of docs/interfaces.md."""
        return {"metrics": {k: (e.to_dict() if e else None) for k, e in self.metrics.items()}}


def decompose(
    regular: Values,
    calibrated: Values,
    *,
    reference_regular: Values,
    reference_calibrated: Values,
) -> Decomposition:
    """Split each registry metric's change from the reference into prior and performance effects.

    ``regular``/``calibrated`` are a window's values (``EvaluationResult.regular`` and
    ``.calibrated``, or the same read back from JSON); the ``reference_`` ones the reference's,
    calibrated at the same pi0.
    """
    missing = [s.name for s in METRICS if s.name not in regular or s.name not in calibrated]
    if missing:
        raise InvalidInputError(f"values lack registry metrics {missing}")
    effects = {
        spec.name: _effects(
            regular[spec.name],
            calibrated[spec.name],
            reference_regular.get(spec.name),
            reference_calibrated.get(spec.name),
        )
        for spec in METRICS
    }
    return Decomposition(metrics=MappingProxyType(effects))


def _effects(
    m_t: float | None, c_t: float | None, m_r: float | None, c_r: float | None
) -> Effects | None:
    if m_t is None or c_t is None or m_r is None or c_r is None:
        return None
    total = m_t - m_r
    performance = c_t - c_r
    return Effects(total=total, prior_effect=total - performance, performance_effect=performance)
