"""Drift decomposition: did the model get worse, or did the positive ratio move?

For a metric M with calibrated variant Mc, a window t and a baseline B (same pi0):

* performance effect = Mc(t) - Mc(B)                 (model quality, at the fixed prior pi0)
* prior effect       = (M(t) - Mc(t)) - (M(B) - Mc(B))  (explained by pi(t) != pi0)
* total              = M(t) - M(B) = prior effect + performance effect (to rounding: the prior
  effect is computed as total - performance effect).

Verdict rule (per metric; the window's verdict is the primary metric's):

1. ``insufficient_data`` if the metric is undefined in the window or the baseline, or either
   lacks an interval for it (a bootstrap interval is turned into a standard error
   ``(hi - lo) / (2 z_level)``).
2. performance changed if the normal interval of the performance effect at ``decision_level``
   (standard error ``sqrt(se_t^2 + se_B^2)``) excludes 0 AND the change is material:
   ``|Mc(t) - Mc(B)| >= tolerance * |Mc(B)|``. Its sign and the metric's direction give
   ``performance_drop`` or ``performance_gain``. The window's ``se_t`` is the larger of its own
   bootstrap standard error and the baseline's at the window's size,
   ``u_B / sqrt(positives(t))`` with ``u_B^2`` the baseline windows' mean of
   ``positives * se^2``: with a few dozen positives a window that drew a low AP also gets a
   narrow bootstrap interval around it, and would otherwise read as a confident drop.
3. prior shifted if pi(t) differs from the baseline's pooled pi beyond the two-proportion
   binomial interval at ``decision_level`` AND the prior effect is material:
   ``|prior effect| >= tolerance * |M(B)|``.
4. both -> ``both``; only one -> that one; neither -> ``stable``.

The defaults (``decision_level=0.997``, about 3 standard errors, and ``tolerance=0.05``) come
from simulation on Siblini's synthetic windows (positive scores N(2, 1), negatives N(0, 1),
pi0 = 0.005, a trailing baseline of 7 windows): over 293 daily windows of 20,000-50,000 rows with
pi drifting over 0.001-0.02, no performance drop (one gain, on a 51-positive window whose AP
came out 2x high); with pi = 0.005 and 30,000 rows, a step of the positive mean to 1.6
(calibrated AP -40%) was flagged within 2 windows in 5 of 6 runs, a step to 1.4 (-60%) within 2
windows in 6 of 6, a step to 1.8 (-20%) not at all: at ~150 positives a window's AP is too
noisy for that. The tests in tests/metrics/test_drift.py replay smaller versions of both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from statistics import NormalDist
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from app.metrics.bootstrap import Intervals
from app.metrics.errors import InvalidInputError
from app.metrics.registry import METRIC_NAMES, METRICS, MetricSpec, metric_spec
from app.metrics.result import EvaluationResult

INSUFFICIENT = "insufficient_data"
VERDICTS = ("stable", "prior_shift", "performance_drop", "performance_gain", "both", INSUFFICIENT)


_TABLE_ROWS = ("regular", "calibrated", "regular_se", "calibrated_se", "calibrated_unit_se")


@dataclass(frozen=True)
class WindowEstimate:
    """Point values and standard errors of one window, or of a pooled baseline."""

    n: int
    positives: int
    pi0: float
    windows: int
    regular: Mapping[str, float | None]
    calibrated: Mapping[str, float | None]
    regular_se: Mapping[str, float | None]
    calibrated_se: Mapping[str, float | None]
    calibrated_unit_se: Mapping[str, float] = field(default_factory=dict)
    """Per metric, ``sqrt(mean(positives * se^2))`` over the windows: se at one positive."""

    @property
    def pi(self) -> float:
        """Pooled positive ratio."""
        return self.positives / self.n

    @cached_property
    def table(self) -> npt.NDArray[np.float64]:
        """``(5, metrics)``: regular, calibrated, their standard errors, and the calibrated
        standard errors at one positive, in registry order (NaN for ``None``)."""
        return np.array(
            [[getattr(self, side).get(name) for name in METRIC_NAMES] for side in _TABLE_ROWS],
            dtype=np.float64,
        )

    @classmethod
    def of(cls, result: EvaluationResult, intervals: Intervals | None) -> WindowEstimate:
        """One window: its values and standard errors derived from its bootstrap intervals."""

        def se(side: str) -> Mapping[str, float | None]:
            if intervals is None:
                return MappingProxyType(dict.fromkeys(result.regular))
            z = _two_sided_z(intervals.level)
            bounds: Mapping[str, tuple[float, float] | None] = getattr(intervals, side)
            return MappingProxyType(
                {k: ((b[1] - b[0]) / (2.0 * z) if b else None) for k, b in bounds.items()}
            )

        calibrated_se = se("calibrated")
        return cls(
            n=result.n,
            positives=result.positives,
            pi0=result.pi0,
            windows=1,
            regular=result.regular,
            calibrated=result.calibrated,
            regular_se=se("regular"),
            calibrated_se=calibrated_se,
            calibrated_unit_se=MappingProxyType(
                {
                    k: s * math.sqrt(result.positives)
                    for k, s in calibrated_se.items()
                    if s is not None and result.positives > 0
                }
            ),
        )


@lru_cache(maxsize=8)
def _two_sided_z(level: float) -> float:
    """The normal quantile of a two-sided interval at ``level`` (a handful of levels in use)."""
    return NormalDist().inv_cdf(0.5 + level / 2.0)


WindowLike = WindowEstimate | tuple[EvaluationResult, Intervals | None]


def _estimate(w: WindowLike) -> WindowEstimate:
    return w if isinstance(w, WindowEstimate) else WindowEstimate.of(*w)


def pool_baseline(windows: Sequence[WindowLike]) -> WindowEstimate:
    """Pool several windows (e.g. the trailing K, or a reference period) into one baseline.

    Each metric's baseline value is the mean of the windows where it is defined, weighted by
    their positives (windows with more positives measure precision-type metrics better); its
    standard error is that of the weighted mean of independent windows, ``None`` if any
    contributing window lacks one. pi is pooled as total positives / total rows. For the
    calibrated metrics it also records the windows' standard error scaled to one positive
    (``calibrated_unit_se``, see the module docstring).
    """
    estimates = [_estimate(w) for w in windows]
    if not estimates:
        raise InvalidInputError("pool_baseline needs at least one window")
    pi0 = estimates[0].pi0
    if any(e.pi0 != pi0 for e in estimates):
        raise InvalidInputError("baseline windows were evaluated at different pi0")
    # One table per window (NaN = None), built once: the windows serve in several baselines
    # each, and numpy does the weighted means of all metrics, both variants, at once.
    table = np.stack([e.table for e in estimates])  # (windows, 5, metrics)
    values, errors, units = table[:, 0:2], table[:, 2:4], table[:, 4]
    weights = np.array([float(e.positives or 1) for e in estimates])[:, None, None]
    defined = ~np.isnan(values)
    used = np.where(defined, weights, 0.0)
    total = used.sum(axis=0)  # sums run over the windows in order, as plain Python sums would
    known = ~np.isnan(units)
    count = known.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(defined, used * values, 0.0).sum(axis=0) / total
        spread = np.sqrt(np.where(defined, (used * errors) ** 2, 0.0).sum(axis=0)) / total
        unit_rms = np.sqrt(np.where(known, units * units, 0.0).sum(axis=0) / count)
    # A standard error is unknown if any window contributing a value lacks one.
    unknown = (defined & np.isnan(errors)).any(axis=0) | (total == 0.0)
    pooled = {
        side: (_mapping(mean[i], total[i] == 0.0), _mapping(spread[i], unknown[i]))
        for i, side in enumerate(("regular", "calibrated"))
    }
    unit_se = {
        name: value
        for name, value, n in zip(METRIC_NAMES, unit_rms.tolist(), count.tolist(), strict=True)
        if n
    }
    return WindowEstimate(
        n=sum(e.n for e in estimates),
        positives=sum(e.positives for e in estimates),
        pi0=pi0,
        windows=sum(e.windows for e in estimates),
        regular=pooled["regular"][0],
        calibrated=pooled["calibrated"][0],
        regular_se=pooled["regular"][1],
        calibrated_se=pooled["calibrated"][1],
        calibrated_unit_se=MappingProxyType(unit_se),
    )


def _mapping(
    values: npt.NDArray[np.float64], missing: npt.NDArray[np.bool_]
) -> Mapping[str, float | None]:
    pairs = zip(METRIC_NAMES, values.tolist(), missing.tolist(), strict=True)
    return MappingProxyType({name: None if gone else value for name, value, gone in pairs})


@dataclass(frozen=True)
class MetricChange:
    """One metric's change from the baseline, split into prior and performance effects."""

    total: float
    prior_effect: float
    performance_effect: float
    verdict: str
    explain: Callable[[], str] = field(repr=False, compare=False)
    """Builds :attr:`reason` (formatting it is most of a change's cost, and only the window's
    primary metric's reason is ever read)."""

    @cached_property
    def reason(self) -> str:
        """Why this verdict, in numbers."""
        return self.explain()

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the reason is reported at the window level)."""
        return {
            "total": self.total,
            "prior_effect": self.prior_effect,
            "performance_effect": self.performance_effect,
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class Decomposition:
    """Per-metric effects and the window's verdict (the primary metric's)."""

    verdict: str
    primary_metric: str
    reason: str
    metrics: Mapping[str, MetricChange | None]

    def to_dict(self) -> dict[str, Any]:
        """JSON form of docs/interfaces.md."""
        return {
            "verdict": self.verdict,
            "primary_metric": self.primary_metric,
            "reason": self.reason,
            "metrics": {k: (m.to_dict() if m else None) for k, m in self.metrics.items()},
        }


def decompose(
    current: WindowLike,
    baseline: WindowLike,
    *,
    primary_metric: str = "average_precision",
    decision_level: float = 0.997,
    tolerance: float = 0.05,
) -> Decomposition:
    """Split each metric's change from ``baseline`` into prior and performance effects.

    Parameters
    ----------
    current:
        The window: ``(EvaluationResult, Intervals | None)`` or a :class:`WindowEstimate`.
    baseline:
        Usually ``pool_baseline([...])`` of the trailing windows; a single window works too.
    primary_metric:
        Registry name whose verdict becomes the window's verdict.
    decision_level:
        Confidence level of the intervals the verdict is decided from.
    tolerance:
        Smallest relative change that counts as material (fraction of the baseline value).

    The rule is spelled out in the module docstring.
    """
    spec = metric_spec(primary_metric)
    if not 0.0 < decision_level < 1.0:
        raise InvalidInputError(f"decision_level must lie in (0, 1), got {decision_level}")
    if tolerance < 0.0:
        raise InvalidInputError(f"tolerance must be >= 0, got {tolerance}")
    cur, base = _estimate(current), _estimate(baseline)
    if cur.pi0 != base.pi0:
        raise InvalidInputError(
            f"window and baseline use different pi0 ({cur.pi0} vs {base.pi0}); "
            "re-evaluate one of them from its sketch"
        )
    z = _two_sided_z(decision_level)
    shifted = _prior_shifted(cur, base, z)
    changes = {
        s.name: _change(s, cur, base, z=z, tolerance=tolerance, pi_shifted=shifted) for s in METRICS
    }
    primary = changes[spec.name]
    if primary is None:
        verdict, reason = INSUFFICIENT, f"{spec.name} is undefined in the window or the baseline"
    else:
        verdict, reason = primary.verdict, primary.reason
    return Decomposition(
        verdict=verdict,
        primary_metric=spec.name,
        reason=reason,
        metrics=MappingProxyType(changes),
    )


def _prior_shifted(cur: WindowEstimate, base: WindowEstimate, z: float) -> bool:
    """Two-proportion test: does pi(t) differ from the baseline's pooled pi?"""
    p = base.pi
    se = math.sqrt(p * (1.0 - p) * (1.0 / cur.n + 1.0 / base.n))
    return abs(cur.pi - p) > z * se


def _change(
    spec: MetricSpec,
    cur: WindowEstimate,
    base: WindowEstimate,
    *,
    z: float,
    tolerance: float,
    pi_shifted: bool,
) -> MetricChange | None:
    m_t, m_b = cur.regular[spec.name], base.regular[spec.name]
    c_t, c_b = cur.calibrated[spec.name], base.calibrated[spec.name]
    if m_t is None or m_b is None or c_t is None or c_b is None:
        return None
    total = m_t - m_b
    performance = c_t - c_b
    prior = total - performance
    se_t, se_b = cur.calibrated_se[spec.name], base.calibrated_se[spec.name]
    if se_t is None or se_b is None:
        return MetricChange(
            total,
            prior,
            performance,
            INSUFFICIENT,
            lambda: f"{spec.name} has no interval to decide from",
        )
    unit = base.calibrated_unit_se.get(spec.name)
    if unit is not None and cur.positives > 0:
        se_t = max(se_t, unit / math.sqrt(cur.positives))
    half = z * math.hypot(se_t, se_b)
    lo, hi = performance - half, performance + half
    material = abs(performance) >= tolerance * abs(c_b)
    moved = material and (lo > 0.0 or hi < 0.0)
    prior_moved = pi_shifted and not spec.prior_invariant and abs(prior) >= tolerance * abs(m_b)
    if spec.higher_is_better is None:
        moved = False  # a threshold has no better or worse
    worse = (performance < 0.0) == bool(spec.higher_is_better)
    direction = "performance_drop" if worse else "performance_gain"
    verdict = (
        ("both" if prior_moved else direction)
        if moved
        else ("prior_shift" if prior_moved else "stable")
    )

    def reason() -> str:
        relative = f" ({performance / c_b:+.1%})" if c_b else ""
        return (
            f"calibrated {spec.name} changed by {performance:+.4g}{relative}; interval of the "
            f"change [{lo:.4g}, {hi:.4g}]; prior effect {prior:+.4g} "
            f"(pi {cur.pi:.4g} vs baseline {base.pi:.4g}{', shifted' if pi_shifted else ''})"
        )

    return MetricChange(total, prior, performance, verdict, reason)
