"""What the detector computes from a frozen reference at a pi0, kept across the worker's passes.

A reference is frozen once and then judged against by every window after it, in pass after
pass: its evaluation, its null model and its own AP's standard error (200 windows of its size
drawn) were computed again in each pass, about 1 ms a segment, most of a window's judgement
besides its own draws. They depend on the reference's sketch and the pi0 alone, so they are
kept by a digest of the sketch's bytes and the pi0: the same sketch gives the same floats,
whichever version, model or pass it comes from, and a changed sketch is another key. The most
recently used stay while their sketches take at most :data:`KEPT_BYTES` (a reference of 280,000
rows and 1,400 frauds has a 29 kB sketch; one with 10^5 frauds, a few MB).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

from app.metrics import CurveSketch, EvaluationResult, NullModel, evaluate_sketch

KEPT_BYTES = 64 * 2**20
"""The kept references' sketches, in bytes, per process (each is held decoded, about as large)."""


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


class _Kept:
    """The kept figures, least recently used first, and their sketches' bytes."""

    def __init__(self) -> None:
        self.figures: OrderedDict[tuple[bytes, float], tuple[ReferenceFigures, int]] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()  # the embedded worker runs in a thread beside the API's

    def get(self, sketch: CurveSketch, pi0: float) -> ReferenceFigures:
        data = sketch.to_bytes()
        key = (hashlib.blake2b(data, digest_size=16).digest(), pi0)
        with self.lock:
            kept = self.figures.get(key)
            if kept is not None:
                self.figures.move_to_end(key)
                return kept[0]
            found = ReferenceFigures(sketch, pi0)
            self.figures[key] = (found, len(data))
            self.size += len(data)
            # The newest stays, whatever its size.
            while self.size > KEPT_BYTES and len(self.figures) > 1:
                self.size -= self.figures.popitem(last=False)[1][1]
            return found


_kept = _Kept()


def figures_of(sketch: CurveSketch, pi0: float) -> ReferenceFigures:
    """The figures of ``sketch`` at ``pi0``: those kept for the same bytes and pi0, or new."""
    return _kept.get(sketch, pi0)
