"""Real nowcasts (the kernel's, in their stored form) for tests that seed the worker's tables."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.metrics import ScoreHistogram, bin_edges, build_sketch, nowcast_window
from app.monitoring.nowcast import stored_nowcast
from tests.support.streams import gaussian_window

THRESHOLD = 1.5


def stored_example(
    *, pi: float, legit_shift: float = 0.0, reference_version: int = 1
) -> dict[str, Any]:
    """The stored nowcast of a 20,000-row window at fraud rate ``pi`` (legitimate scores moved
    by ``legit_shift``) against a 60,000-row labelled reference at 0.05."""
    rng = np.random.default_rng(11)
    scores, labels = gaussian_window(rng, 60_000, 0.05, 2.0)
    edges = bin_edges(scores[:20_000], THRESHOLD)
    reference = ScoreHistogram.of(edges, scores, labels, np.empty(0)).classes(edges)
    sketch = build_sketch(scores, labels, threshold=THRESHOLD)
    window, truth = gaussian_window(rng, 20_000, pi, 2.0)
    window = np.where(truth == 0, window + legit_shift, window)
    counts = ScoreHistogram.of(edges, np.empty(0), np.empty(0, dtype=np.int8), window)
    estimate = nowcast_window(
        counts.rows, int((window >= THRESHOLD).sum()), reference, sketch, seed=1, replicates=100
    )
    return stored_nowcast(estimate, reference_version)
