"""The what-if integrals with the kernel's quadrature and with scipy's, timed in one run.

app.metrics._quadrature integrates the precision of every ROC point at once, bisecting every
interval still above its error budget together. scipy's adaptive rules are the reference
implementations (issue 15 asked to use them unless a measurement says otherwise): ``quad_vec``
calls the integrand once per node, ``cubature`` (Gauss-Kronrod 15) refines one interval at a
time, ``quad`` takes scalar integrands only. Each replaces the kernel's rule in
``app.metrics.skew`` and ``app.metrics.whatif`` in turn, for the two callers:

- ``over_range`` with a weight (integrated precision of every curve point, Lampert eq. 7);
- ``along_trajectory`` with 30 points (temporal precision and temporal AP, eq. 4).

    python -m bench.quadrature [--rows 10000 100000] [--repeats 5]

Prints the median time of each, its ratio to the kernel's rule and the largest difference of
the results from the kernel's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from scipy.integrate import cubature, quad, quad_vec

from app.metrics import _quadrature, skew, whatif
from app.metrics.sketch import CurveSketch
from app.metrics.sketch_build import build_sketch
from app.metrics.types import Float64Array

Integrand = Callable[[Float64Array], Float64Array]
Rule = Callable[..., Float64Array]


def _quad_vec(f: Integrand, a: float, b: float, *, tol: float = 1e-13) -> Float64Array:
    value, _ = quad_vec(
        lambda x: np.asarray(f(np.array([x])))[0],
        a,
        b,
        epsabs=tol * (b - a),
        epsrel=0.0,
        norm="max",
        limit=10_000,
    )
    return np.asarray(value, dtype=np.float64)


def _cubature(f: Integrand, a: float, b: float, *, tol: float = 1e-13) -> Float64Array:
    result = cubature(
        lambda x: np.asarray(f(x[:, 0])),
        np.array([a]),
        np.array([b]),
        rule="gk15",
        atol=tol * (b - a),
        rtol=0.0,
        max_subdivisions=100_000,
    )
    return np.asarray(result.estimate, dtype=np.float64)


def _quad(f: Integrand, a: float, b: float, *, tol: float = 1e-13) -> Float64Array:
    """QUADPACK for a scalar integrand; cubature for a vector one (quad takes no vectors)."""
    if np.asarray(f(np.array([0.5 * (a + b)]))).shape[1] != 1:
        return _cubature(f, a, b, tol=tol)
    with warnings.catch_warnings():  # its round-off warnings show in the difference column
        warnings.simplefilter("ignore")
        value, _ = quad(
            lambda x: float(np.asarray(f(np.array([x])))[0, 0]),
            a,
            b,
            epsabs=tol * (b - a),
            epsrel=0.0,
            limit=10_000,
        )
    return np.array([value])


RULES: dict[str, Rule] = {
    "kernel (G7-K15, all intervals at once)": _quadrature.integrate,
    "scipy cubature (gk15)": _cubature,
    "scipy quad (scalar) / cubature": _quad,
    "scipy quad_vec": _quad_vec,
}


def _sketch(rows: int, rng: np.random.Generator) -> CurveSketch:
    labels = rng.random(rows) < 0.01
    scores = np.round(rng.normal(0.0, 1.0, rows) + 2.0 * labels, 4)
    return build_sketch(scores, labels.astype(np.int64), threshold=1.5)


def _cases(rows: list[int]) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    weight = [(0.0, 0.0), (0.01, 1.0), (0.05, 0.0)]
    trajectory = [(float(t), 0.01 * 1.05**t) for t in range(30)]
    cases: dict[str, Callable[[], Any]] = {}
    for n in rows:
        sketch = _sketch(n, rng)
        points = sketch.roc_points()[0].size
        cases[f"weighted range, {points} curve points"] = partial(
            whatif.over_range, sketch, 0.0, 0.05, weight
        )
        cases[f"30-point trajectory, {points} curve points"] = partial(
            whatif.along_trajectory, sketch, trajectory, "linear"
        )
    return cases


def _use(rule: Rule) -> None:
    skew.integrate = rule  # type: ignore[attr-defined]  # swapped in for the measurement
    whatif.integrate = rule  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """Time every case with every rule; print medians, ratios and differences."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    cases = _cases(args.rows)
    kernel = _quadrature.integrate
    print(f"{'case / rule':44} {'median ms':>10} {'/ kernel':>9} {'max |diff|':>11}")
    try:
        for label, call in cases.items():
            print(label)
            baseline: tuple[float, Any] | None = None
            for name, rule in RULES.items():
                _use(rule)
                call()
                runs = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    result = call()
                    runs.append(time.perf_counter() - start)
                median = statistics.median(runs)
                if baseline is None:
                    baseline = (median, result)
                diff = max(
                    abs(getattr(result, f) - getattr(baseline[1], f))
                    for f in ("precision", "average_precision")
                    if getattr(result, f) is not None
                )
                print(f"  {name:42} {1000 * median:10.2f} {median / baseline[0]:9.2f} {diff:11.1e}")
    finally:
        _use(kernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
