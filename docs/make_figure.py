"""Draw docs/img/drift.png: the README's picture of what calmon separates.

A synthetic 60-day stream (Siblini et al. 2020, section 3.2: Gaussian scores, 100,000 rows a day)
whose fraud ratio swings between 0.1% and 2% every day, and whose model degrades from day 40 on
(the positives' mean score slides from 2.0 to 1.4). Every number is computed by calmon's kernel
(`app.metrics`) exactly as the worker does: evaluate, 1000-replicate bootstrap, decompose against
the 7 previous windows. Run it with matplotlib installed (not a calmon dependency):

    .venv/bin/pip install matplotlib && .venv/bin/python docs/make_figure.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib as mpl

mpl.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from app.metrics import bootstrap, decompose, evaluate, pool_baseline
from tests.support.synthetic import siblini_window

DAYS, ROWS, CHANGE_DAY, BASELINE = 60, 100_000, 40, 7


def main() -> None:
    rng = np.random.default_rng(7)
    pis = np.exp(rng.uniform(np.log(0.001), np.log(0.02), DAYS))
    pi0 = float(pis[:CHANGE_DAY].mean())
    windows, verdicts = [], []
    for day, pi in enumerate(pis):
        mu1 = 2.0 - 0.6 * min(1.0, max(0.0, (day - CHANGE_DAY + 1) / 5))
        scores, labels = siblini_window(ROWS, float(pi), mu1, 0.0, rng)
        result = evaluate(scores, labels, threshold=1.5, pi0=pi0)
        estimate = (result, bootstrap(result.sketch, pi0=pi0, seed=day))
        if day >= BASELINE:
            baseline = pool_baseline(windows[-BASELINE:])
            verdicts.append(decompose(estimate, baseline).verdict)
        else:
            verdicts.append("insufficient_data")
        windows.append(estimate)

    days = np.arange(DAYS)
    regular = [w[0].regular["average_precision"] for w in windows]
    calibrated = [w[0].calibrated["average_precision"] for w in windows]
    ci = np.array([w[1].to_dict()["calibrated"]["average_precision"] for w in windows])

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6), sharex=True, height_ratios=[2, 1])
    top.plot(days, regular, color="#999999", label="AP as measured (moves with the fraud rate)")
    top.plot(days, calibrated, color="#1f77b4", label=f"AP calibrated to pi0 = {pi0:.4f}")
    top.fill_between(days, ci[:, 0], ci[:, 1], color="#1f77b4", alpha=0.2, label="95% interval")
    drops = [d for d, v in enumerate(verdicts) if v in ("performance_drop", "both")]
    top.scatter(
        drops,
        [calibrated[d] for d in drops],
        color="#d62728",
        zorder=3,
        label="verdict performance_drop / both (pages)",
    )
    top.axvline(CHANGE_DAY, color="#d62728", linestyle=":", linewidth=1)
    top.text(CHANGE_DAY + 0.5, 0.48, "model starts degrading", color="#d62728", va="top")
    top.set_ylabel("average precision")
    top.set_ylim(0, 0.5)
    top.legend(loc="lower left", fontsize=8)
    bottom.plot(days, pis * 100, color="#ff7f0e", label="fraud ratio pi (%)")
    bottom.axhline(pi0 * 100, color="#333333", linestyle="--", label="reference pi0 (%)")
    bottom.set_ylabel("percent")
    bottom.set_xlabel("day")
    bottom.legend(loc="upper left", fontsize=8)
    fig.suptitle(
        "calmon: a fraud-rate swing moves measured AP; only a model change moves calibrated AP"
    )
    fig.tight_layout()
    out = Path(__file__).parent / "img" / "drift.png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}; drop verdicts on days {drops}")


if __name__ == "__main__":
    main()
