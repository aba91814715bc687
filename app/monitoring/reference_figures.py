"""What the detector computes from a frozen reference at a pi0, kept across the worker's passes.

A reference is frozen once and then judged against by every window after it, in pass after
pass: its evaluation, its null model and its own AP's standard error (200 windows of its size
drawn) were computed again in each pass, about 1 ms a segment, most of a window's judgement
besides its own draws. They depend on the reference's sketch and the pi0 alone, so they are
kept by the sketch's bytes and the pi0: the same sketch gives the same floats, whichever
version, model or pass it comes from, and a changed sketch is another key. The most recently
used :data:`KEPT` stay (about 30 kB of sketch each at 1,400 entries).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

from app.metrics import CurveSketch, EvaluationResult, NullModel, evaluate_sketch

KEPT = 256
"""References kept per process: a worker serving 100 models of 2 segments keeps them all."""


@dataclass(frozen=True, eq=False)
class ReferenceFigures:
    """A reference sketch's figures at ``pi0``, each computed on first use."""

    sketch: CurveSketch
    pi0: float

    @cached_property
    def result(self) -> EvaluationResult:
        """Every metric of the pooled reference, regular and calibrated."""
        return evaluate_sketch(self.sketch, pi0=self.pi0)

    @cached_property
    def null_model(self) -> NullModel:
        """Windows drawn from the reference (see app/metrics/null_model.py)."""
        return NullModel.of(self.sketch, pi0=self.pi0)

    @cached_property
    def standard_error(self) -> float:
        """Standard error of the reference's own calibrated AP."""
        return self.null_model.standard_error()


_kept: OrderedDict[tuple[bytes, float], ReferenceFigures] = OrderedDict()
_lock = threading.Lock()  # the embedded worker runs in a thread beside the API's


def figures_of(sketch: CurveSketch, pi0: float) -> ReferenceFigures:
    """The figures of ``sketch`` at ``pi0``: those kept for the same bytes and pi0, or new."""
    key = (sketch.to_bytes(), pi0)
    with _lock:
        found = _kept.get(key)
        if found is not None:
            _kept.move_to_end(key)
            return found
        found = ReferenceFigures(sketch, pi0)
        _kept[key] = found
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
        return found
