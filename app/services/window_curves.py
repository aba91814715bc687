"""The curves of a window's detail page: PR (measured and at pi0), ROC and PR-Gain."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.metrics import CurveSketch
from app.metrics.curves import pr_curve, pr_gain_curve, roc_points
from app.schemas.metrics import CurveName, GainCurveOut, PrCurve, RocCurveOut

CURVE_POINTS = 200
"""Points per drawn curve: finer than a chart's pixels at the page's width, 10 KB a curve."""


@dataclass(frozen=True)
class WindowCurves:
    """Every curve of one stored window; none while its measured values are withheld."""

    pr: dict[CurveName, PrCurve] = field(default_factory=dict)
    roc: RocCurveOut | None = None
    pr_gain: dict[CurveName, GainCurveOut] = field(default_factory=dict)

    @classmethod
    def of(cls, sketch_bytes: bytes | None, pi0: float | None) -> WindowCurves:
        """The curves of a stored sketch (``None``: withheld or not stored), at ``pi0`` too."""
        if sketch_bytes is None:
            return cls()
        sketch = CurveSketch.from_bytes(sketch_bytes)
        priors: dict[CurveName, float | None] = {"regular": None}
        if pi0 is not None:
            priors["calibrated"] = pi0
        pr = {}
        gains = {}
        for name, prior in priors.items():
            curve = pr_curve(sketch, pi0=prior, max_points=CURVE_POINTS)
            pr[name] = PrCurve.model_validate(curve.to_dict())
            gain = pr_gain_curve(sketch, pi0=prior, max_points=CURVE_POINTS)
            gains[name] = GainCurveOut.model_validate(gain.to_dict())
        roc = RocCurveOut.model_validate(roc_points(sketch, max_points=CURVE_POINTS).to_dict())
        return cls(pr=pr, roc=roc, pr_gain=gains)
