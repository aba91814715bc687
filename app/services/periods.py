"""A period of a model's mature windows, pooled into one curve sketch (the analyses' input).

Reading and pooling a year of windows' sketches costs ~0.15 s, so the pooled sketch is kept in a
small in-process cache keyed by the exact windows it was made of (their starts and computation
times, read without the sketches): a recomputed window changes the key, so a cached sketch is
never stale, and a hit reads no sketch at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy.orm import Session

from app.db.repositories.pi0 import Pi0Repository
from app.db.repositories.window_metrics import PeriodWindow, WindowMetricsRepository
from app.db.tables import MonitoredModel
from app.errors import NotFoundError, PayloadValidationError
from app.metrics import Budget, CurveSketch, pool_sketches
from app.metrics.skew import skew_range_from_history
from app.monitoring.maturity import MaturityRule
from app.monitoring.pi0 import WindowLabels
from app.services.model_settings import maturity_now

_CACHE_SIZE = 32
POOL_ITERATIONS = 50
"""The pooling EM's iteration cap here. On a year of daily windows (10,000 rows, ~100 frauds
each; bench/analyses.py's champion) the EM creeps on for thousands of iterations. Calibrated AP
of the pool against the pool after 2,000 iterations, and the pool's own bootstrap standard error:

| iterations | at pi = 0.001 | at pi = 0.01 | pooling (busy 2-core host) |
|---|---|---|---|
| 30 | 1.4e-4 | 1.1e-5 | 19 ms |
| 50 | 8.2e-5 | 6.9e-6 | 34 ms |
| 100 | 4.7e-5 | 7.4e-6 | 69 ms |
| 500 (the kernel's default) | 1.2e-6 | 7.1e-7 | 296 ms |
| standard error of the pooled AP | 1.5e-3 | 2.3e-3 | |

At 50 the error is under an eighteenth of the standard error at a tenth of the model's fraud
rate, and under a three-hundredth at its own, for half the time of 100: the pooling is most of
a cold request (the 200 ms budget of issue 11)."""
_CacheKey = tuple[int, str, tuple[tuple[datetime, datetime], ...]]


class _PooledCache:
    """The most recently used pooled sketches (thread-safe: the API runs handlers in threads)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[_CacheKey, CurveSketch] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _CacheKey) -> CurveSketch | None:
        with self._lock:
            sketch = self._items.get(key)
            if sketch is not None:
                self._items.move_to_end(key)
            return sketch

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def put(self, key: _CacheKey, sketch: CurveSketch) -> None:
        with self._lock:
            self._items[key] = sketch
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_POOLED = _PooledCache(_CACHE_SIZE)


def clear_pooled_cache() -> None:
    """Forget every cached pooled sketch (benchmarks time the cold path with it)."""
    _POOLED.clear()


@dataclass(frozen=True)
class Period:
    """A segment's mature windows in [start, end) with labelled positives, and their pool."""

    model: MonitoredModel
    segment: str
    windows: list[PeriodWindow]
    sketch: CurveSketch
    pi0: float | None
    pi0_version: int | None

    @property
    def pis(self) -> list[float]:
        """Each window's fraud rate among its labelled rows."""
        return [w.positives / w.labelled for w in self.windows]

    @property
    def current_pi(self) -> float:
        """The newest mature window's fraud rate."""
        return self.pis[-1]

    @property
    def budget(self) -> Budget:
        """The model's budget over the period: alert_capacity per window, so the period's share
        is the windows' capacity over the rows pooled (the segment's own rows)."""
        capacity = self.model.alert_capacity
        rows = sum(w.rows_total for w in self.windows)
        total = capacity * len(self.windows) if capacity else None
        entities = self.sketch.entities.n if self.sketch.entities is not None else 0
        return Budget.of(total, self.model.review_cost, rows, entities)

    @property
    def pooled_pi(self) -> float:
        """The period's fraud rate: its positives over its labelled rows."""
        return self.sketch.positives / self.sketch.n

    def history_range(self) -> tuple[float, float]:
        """Lampert section 5.1: mean +- 3 std of the windows' fraud rates, clipped to [0, 1]."""
        if len(self.windows) < 2:
            raise PayloadValidationError(
                "the period has one mature window: its fraud rate has no spread to make a "
                "range from; give the range (pi_lo, pi_hi) or a longer period",
                details=[{"field": "range", "message": "required for a one-window period"}],
            )
        return skew_range_from_history(self.pis)

    @property
    def pi_spread(self) -> tuple[float, float]:
        """Mean and population standard deviation of the windows' fraud rates."""
        values = np.asarray(self.pis)
        return float(values.mean()), float(values.std(ddof=0))


def _usable(window: PeriodWindow, maturity: MaturityRule) -> bool:
    counts = WindowLabels(
        window.window_start, window.labelled, window.positives, window.label_coverage
    )
    return window.has_sketch and window.positives > 0 and maturity.is_mature(counts)


def load_period(
    session: Session,
    model: MonitoredModel,
    segment: str,
    start: datetime | None,
    end: datetime | None,
) -> Period:
    """The model's mature windows of ``segment`` in [start, end), pooled; 404 if there are none."""
    repository = WindowMetricsRepository(session)
    maturity = maturity_now(session, model)
    windows = [
        w for w in repository.period_windows(model.id, segment, start, end) if _usable(w, maturity)
    ]
    if not windows:
        span = f"[{start.isoformat() if start else '-inf'}, {end.isoformat() if end else 'inf'})"
        raise NotFoundError(
            f"model {model.name!r} has no mature window with labelled frauds in segment "
            f"{segment!r} and period {span}",
            extra={"model": model.name, "segment": segment},
        )
    key: _CacheKey = (model.id, segment, tuple((w.window_start, w.computed_at) for w in windows))
    sketch = _POOLED.get(key)
    if sketch is None:
        starts = [w.window_start for w in windows]
        stored = repository.sketches(model.id, segment, starts)
        sketches = [CurveSketch.from_bytes(data) for data in stored]
        thresholds = {s.threshold for s in sketches}
        # Across a threshold change the pool is cut at the model's current threshold.
        threshold = None if len(thresholds) == 1 else model.threshold
        sketch = pool_sketches(sketches, threshold=threshold, max_iterations=POOL_ITERATIONS)
        _POOLED.put(key, sketch)
    current = Pi0Repository(session).current(model.id)
    return Period(
        model=model,
        segment=segment,
        windows=windows,
        sketch=sketch,
        pi0=current.value if current is not None else None,
        pi0_version=current.version if current is not None else None,
    )
