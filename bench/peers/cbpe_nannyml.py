# mypy: ignore-errors
"""NannyML's CBPE on bench/nowcast.py's windows: the peer, run in its own virtualenv.

    python3 -m venv /work/nannyml-venv
    /work/nannyml-venv/bin/pip install nannyml statsmodels
    /work/nannyml-venv/bin/python bench/peers/cbpe_nannyml.py FOLDER OUT.json

(nannyml 0.13.1 imports statsmodels without declaring it, hence the second package.) calmon
never imports this file: bench/nowcast.py writes FOLDER (one ``stream_NNN.npz`` per stream:
the reference's labelled rows and the analysis windows' rows, each with the probability and
prediction CBPE is given and its window's day) and reads OUT.json back.

Per stream, CBPE is fitted on the reference and estimates precision, F1 and average precision
on the analysis rows, one chunk per window (a timestamp per window's day, ``chunk_period="D"``),
everything else at NannyML's defaults.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

# NannyML reports usage to its makers unless told not to; a benchmark has nothing to report.
os.environ["NML_DISABLE_USAGE_LOGGING"] = "1"

import nannyml
import numpy as np
import pandas as pd

METRICS = ("precision", "f1", "average_precision")
DAY0 = pd.Timestamp("2026-01-01")


def frame(proba, pred, day, label=None):
    """Rows as CBPE reads them; the window's day as its timestamp."""
    columns = {
        "proba": proba,
        "pred": pred.astype(np.int64),
        "timestamp": DAY0 + pd.to_timedelta(day, unit="D"),
    }
    if label is not None:
        columns["label"] = label.astype(np.int64)
    return pd.DataFrame(columns)


def estimate_stream(path):
    """CBPE fitted on one stream's reference, estimating each of its analysis windows."""
    data = np.load(path)
    reference = frame(data["ref_proba"], data["ref_pred"], data["ref_day"], data["ref_label"])
    # The analysis windows follow the reference's days, so every chunk is one window.
    analysis = frame(data["ana_proba"], data["ana_pred"], data["ana_day"] + 1000)
    start = time.perf_counter()
    estimator = nannyml.CBPE(
        y_pred_proba="proba",
        y_pred="pred",
        y_true="label",
        timestamp_column_name="timestamp",
        problem_type="classification_binary",
        metrics=list(METRICS),
        chunk_period="D",
    )
    estimator.fit(reference)
    result = estimator.estimate(analysis).filter(period="analysis").to_df()
    seconds = time.perf_counter() - start
    windows = int(np.unique(data["ana_day"]).size)
    if len(result) != windows:
        raise RuntimeError(f"{path.name}: {len(result)} chunks for {windows} windows")
    out = {"needs_calibration": bool(estimator.needs_calibration), "seconds": seconds}
    for name in METRICS:
        out[name] = {
            "value": result[(name, "value")].astype(float).tolist(),
            "lower": result[(name, "lower_confidence_boundary")].astype(float).tolist(),
            "upper": result[(name, "upper_confidence_boundary")].astype(float).tolist(),
        }
    return out


def main(folder, out):
    """Every stream in ``folder``, in name order; JSON to ``out``."""
    warnings.simplefilter("ignore")  # chunk-count and future warnings, one per stream
    # CBPE's AP sampling error resamples the reference with numpy's global generator: seeded,
    # so that a run repeats.
    np.random.seed(0)
    streams = [estimate_stream(p) for p in sorted(Path(folder).glob("stream_*.npz"))]
    Path(out).write_text(json.dumps({"nannyml": nannyml.__version__, "streams": streams}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
