# mypy: ignore-errors
"""NannyML's realized performance on the peers' job (bench/peers_job.py): run in its own
virtualenv, as bench/peers/cbpe_nannyml.py is.

    python3 -m venv /work/nannyml-venv
    /work/nannyml-venv/bin/pip install nannyml==0.13.1 statsmodels
    /work/nannyml-venv/bin/python bench/peers/realized_nannyml.py ROWS.npz OUT.json ROUNDS

ROWS.npz holds the job's labelled rows (``score``, ``label``, ``day``, ``segment`` codes); the
first ``reference_days`` days are the reference NannyML fits on. NannyML has no segments: as a
user would, one ``PerformanceCalculator`` per segment and one for the whole stream, each fitted
on its part of the reference and calculating its part of every day (``chunk_period="D"``), with
the metrics calmon and NannyML both compute (precision, recall, F1, ROC AUC, average precision;
NannyML's sampling error beside each value). Times ``calculate`` alone and ``fit`` + ``calculate``
over the six parts, ``ROUNDS`` times; prints nothing, writes OUT.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

# NannyML reports usage to its makers unless told not to; a benchmark has nothing to report.
os.environ["NML_DISABLE_USAGE_LOGGING"] = "1"

import nannyml
import numpy as np
import pandas as pd

METRICS = ["precision", "recall", "f1", "roc_auc", "average_precision"]
DAY0 = pd.Timestamp("2025-01-01")


def frame(data, mask, threshold):
    """The rows of ``mask`` as NannyML reads them: score, prediction, label, the day."""
    score = data["score"][mask]
    return pd.DataFrame(
        {
            "proba": score,
            "pred": (score >= threshold).astype(np.int64),
            "label": data["label"][mask].astype(np.int64),
            "timestamp": DAY0 + pd.to_timedelta(data["day"][mask], unit="D"),
        }
    )


def parts(data, reference_days, threshold):
    """(reference, analysis) frames of the whole stream and of each segment."""
    reference = data["day"] < reference_days
    selections = [np.ones(data["score"].size, dtype=bool)]
    selections += [data["segment"] == code for code in np.unique(data["segment"])]
    return [
        (frame(data, chosen & reference, threshold), frame(data, chosen, threshold))
        for chosen in selections
    ]


def run_once(frames):
    """Fit and calculate every part; (fit seconds, calculate seconds, chunks)."""
    fit = calculate = 0.0
    chunks = 0
    for reference, analysis in frames:
        calculator = nannyml.PerformanceCalculator(
            y_pred_proba="proba",
            y_pred="pred",
            y_true="label",
            timestamp_column_name="timestamp",
            problem_type="classification_binary",
            metrics=METRICS,
            chunk_period="D",
        )
        start = time.perf_counter()
        calculator.fit(reference)
        fit += time.perf_counter() - start
        start = time.perf_counter()
        result = calculator.calculate(analysis)
        calculate += time.perf_counter() - start
        chunks += len(result.filter(period="analysis").to_df())
    return fit, calculate, chunks


def main(rows_path, out, rounds):
    warnings.simplefilter("ignore")
    data = np.load(rows_path)
    frames = parts(data, int(data["reference_days"]), float(data["threshold"]))
    runs = [run_once(frames) for _ in range(int(rounds))]
    with open(out, "w") as handle:
        json.dump(
            {
                "nannyml": nannyml.__version__,
                "numpy": np.__version__,
                "pandas": pd.__version__,
                "fit": [r[0] for r in runs],
                "calculate": [r[1] for r in runs],
                "chunks": runs[0][2],
                "parts": len(frames),
            },
            handle,
        )


if __name__ == "__main__":
    main(*sys.argv[1:4])
