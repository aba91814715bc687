"""The suite's fast version of bench/detection.py: calmon's own domain code on simulated
streams (Siblini's Gaussian setup), with the properties the README's tables report at full size.

Sizes are positives per window; the full benchmark (``python -m bench.detection``) runs four
sizes, more scenarios and more seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench import detection as bench

# Statistical streams of the detection bench: 2-6 s a test (pytest -m "not slow" leaves them out).
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("size", [25, 100])
def test_pure_prior_drift_never_pages(size: int) -> None:
    """The model is unchanged while the fraud rate moves 20x day to day, or trends 20x."""
    for kind in ("day_to_day", "trend"):
        days = bench.prior_drift(kind, 140, np.random.default_rng([size, 1]))
        log = bench.run_stream(days, size, seed=1)
        assert len(log.judged) >= 60
        assert bench.episodes(log) == 0, [w for w, (_, p, _) in log.judged.items() if p]


def test_a_step_drop_pages_soon_and_stays_on_while_it_lasts() -> None:
    """-40% calibrated AP at 100 positives a window: paged within a few windows (the full
    bench: median 3), on for the whole 60-window drop, off again a few windows after it."""
    change = bench._warmup(100) + 10
    log = bench.run_stream(bench.degradation("lasting", change, change + 80), 100, seed=5)
    page = bench.first_page(log, change)
    assert page is not None
    assert page - change <= 6
    states = dict(log.paging())
    assert not any(states[w] for w in range(change) if w in states)
    assert all(states[w] for w in range(page, change + 60))
    assert not states[change + 75]


def test_late_labels_judge_only_mature_windows() -> None:
    """Frauds labelled after 7 to 28 days, legitimate rows after 45: no window is judged before
    it is mature, and a step drop pages within days of its windows maturing."""
    change = bench._warmup(100) + 10
    log, matured = bench.run_late_labels(bench.degradation("step", change, change + 12), 100, 3)
    assert all(day >= matured[w] for w, (day, _, _) in log.judged.items())
    page = bench.first_page(log, change)
    assert page is not None
    assert log.judged[page][0] - matured[change] <= 6


def test_one_degraded_segment_pages_and_the_nine_others_do_not() -> None:
    change = bench._warmup(100) + 10
    logs = bench.run_segments(100, seed=4, change=change, windows=change + 12)
    assert bench.first_page(logs["s0"], change) is not None
    assert all(bench.episodes(logs[f"s{i}"]) == 0 for i in range(1, 10))
