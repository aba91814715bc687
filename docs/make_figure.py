"""Draw docs/img/drift.png: the README's picture of what calmon separates, and when it pages.

A synthetic 100-day stream (Siblini et al. 2020, section 3.2: Gaussian scores, 10,000 rows a
day, about 60 frauds a day) whose fraud rate swings between 0.1% and 2% every day, and whose
model degrades slowly from day 60 on (its calibrated AP slides 50% lower over 20 days). Every
number is computed by calmon's own code as the worker computes it: windows evaluated at pi0 with
1,000-replicate bootstrap intervals, the automatic reference (first 14 usable windows, 500
positives), and the drop detector judging each window against it (app/monitoring). Run it with
matplotlib installed (not a calmon dependency):

    .venv/bin/pip install matplotlib && .venv/bin/python -m docs.make_figure
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import matplotlib as mpl

mpl.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from app.metrics import bootstrap, evaluate_sketch, pool_sketches
from app.monitoring.alerts import (
    FrozenReference,
    ReferenceAtPi0,
    SegmentAlert,
    WindowToJudge,
    judge_window,
)
from app.monitoring.detector import THRESHOLD
from app.monitoring.pi0 import WindowLabels
from bench.simulation import HEALTHY_MU, gaussian_sketch, mu_for

DAYS, ROWS, CHANGE_DAY, SLIDE, REFERENCE = 100, 10_000, 60, 20, 14
DAY0 = datetime(2026, 1, 1, tzinfo=UTC)


def main() -> None:
    rng = np.random.default_rng(11)
    pis = np.exp(rng.uniform(np.log(0.001), np.log(0.02), DAYS))
    low = mu_for(0.5)
    sketches = []
    for day, pi in enumerate(pis):
        share = min(max(day - CHANGE_DAY + 1, 0) / SLIDE, 1.0)
        positives = int(rng.binomial(ROWS, pi))
        mu = HEALTHY_MU + share * (low - HEALTHY_MU)
        sketches.append(gaussian_sketch(rng, positives, ROWS - positives, mu))
    pi0 = sum(s.positives for s in sketches[:REFERENCE]) / (REFERENCE * ROWS)
    reference = ReferenceAtPi0(
        FrozenReference(
            version=1,
            first_window=DAY0,
            last_window=DAY0 + timedelta(REFERENCE - 1),
            windows=REFERENCE,
            labelled=REFERENCE * ROWS,
            positives=sum(s.positives for s in sketches[:REFERENCE]),
            sketch=pool_sketches(sketches[:REFERENCE]),
        ),
        pi0,
    )
    alert = SegmentAlert.fresh("all", 1, "")
    regular, calibrated, bands, evidence, pages = [], [], [], [], []
    for day, sketch in enumerate(sketches):
        result = evaluate_sketch(sketch, pi0=pi0)
        intervals = bootstrap(sketch, pi0=pi0, seed=day)
        regular.append(result.regular["average_precision"])
        calibrated.append(result.calibrated["average_precision"])
        bands.append(intervals.calibrated["average_precision"] or (np.nan, np.nan))
        if day < REFERENCE:
            evidence.append(0.0)
            continue
        counts = WindowLabels(DAY0 + timedelta(day), ROWS, sketch.positives, 1.0)
        alert, outcome = judge_window(
            alert,
            WindowToJudge(counts, result.regular, result.calibrated, None, seed=day),
            reference,
            threshold=THRESHOLD,
            detection_drop=0.3,
            alert_floor=None,
        )
        evidence.append(alert.detector.drop)
        if outcome.judgement.signals:
            pages.append(day)

    days = np.arange(DAYS)
    band = np.array(bands, dtype=float)
    fig, (top, middle, bottom) = plt.subplots(
        3, 1, figsize=(10, 7.5), sharex=True, height_ratios=[2.2, 1.2, 1]
    )
    top.axvspan(-0.5, REFERENCE - 0.5, color="#dddddd", label="reference (first 14 days)")
    top.plot(days, regular, color="#999999", linestyle=":", label="AP as measured (moves with pi)")
    top.plot(days, calibrated, color="#1f77b4", label=f"AP calibrated to pi0 = {pi0:.4f}")
    top.fill_between(days, band[:, 0], band[:, 1], color="#1f77b4", alpha=0.2, label="95% band")
    top.axhline(reference.null_model.value, color="#1f77b4", linestyle="--", linewidth=1)
    top.scatter(
        pages,
        [calibrated[d] for d in pages],
        color="#d62728",
        zorder=3,
        s=14,
        label="paging (drop state)",
    )
    top.axvline(CHANGE_DAY, color="#d62728", linestyle=":", linewidth=1)
    top.text(CHANGE_DAY + 0.5, 0.78, "the model starts to slide", color="#d62728", va="top")
    top.set_ylabel("average precision")
    top.set_ylim(0, 0.8)
    top.legend(loc="upper left", fontsize=8, ncol=2)
    middle.plot(days, evidence, color="#2ca02c", label="drop evidence (CUSUM of log-likelihoods)")
    middle.axhline(THRESHOLD, color="#d62728", linestyle="--", label="pages above 10")
    middle.set_ylabel("evidence")
    middle.legend(loc="upper left", fontsize=8)
    bottom.plot(days, pis * 100, color="#ff7f0e", label="fraud rate pi (%)")
    bottom.axhline(pi0 * 100, color="#333333", linestyle="--", label="reference prior pi0 (%)")
    bottom.set_ylabel("percent")
    bottom.set_xlabel("day")
    bottom.legend(loc="upper left", fontsize=8)
    fig.suptitle(
        "calmon: fraud-rate swings move measured AP and never page; a slow model decline does"
    )
    fig.tight_layout()
    out = Path(__file__).parent / "img" / "drift.png"
    fig.savefig(out, dpi=110)
    first = pages[0] if pages else None
    print(f"wrote {out}; pages from day {first} ({len(pages)} paging days)")


if __name__ == "__main__":
    main()
