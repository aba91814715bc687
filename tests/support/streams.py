"""Synthetic daily prediction streams for the worker's tests and benchmark.

Scores follow the Gaussian setup of Siblini et al. (2020), section 3.2 (tests/support/synthetic.py)
with negatives ~ N(0, 1) and positives ~ N(mu, 1), so the model's ranking quality is set by mu
alone and the class prior pi by the fraction of positives. Three scenarios:

- ``prior_drift``: pi varies day to day between 0.001 and 0.02 (log-uniform), mu constant; the
  model is unchanged, so calibrated metrics must stay flat while regular ones swing with pi.
- ``degradation``: pi constant, mu drifts down from ``change_day`` on (P(x|y) drift).
- ``both``: the two at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

import httpx
import numpy as np
import numpy.typing as npt

from app.client import json_arrays
from tests.support.synthetic import siblini_window

Scenario = Literal["prior_drift", "degradation", "both"]
FIRST_DAY = date(2026, 1, 1)


@dataclass(frozen=True)
class StreamSpec:
    """One scenario's parameters (defaults: what the end-to-end tests use)."""

    scenario: Scenario
    days: int = 60
    rows_per_day: int = 20_000
    positive_mean: float = 2.0
    constant_pi: float = 0.01
    pi_low: float = 0.001
    pi_high: float = 0.02
    change_day: int = 40
    drift_per_day: float = 0.15
    seed: int = 0


@dataclass(frozen=True)
class Day:
    """One day of predictions: the window it falls in, its scores and labels."""

    index: int
    window_start: datetime
    pi: float
    positive_mean: float
    scores: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int8]


def day_start(index: int) -> datetime:
    """UTC midnight of day ``index`` of the stream (a daily window in UTC)."""
    return datetime.combine(FIRST_DAY + timedelta(days=index), time(0), UTC)


def gaussian_window(
    rng: np.random.Generator, n: int, pi: float, positive_mean: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int8]]:
    """n rows of the Siblini 3.2 setup with negatives ~ N(0, 1), positives ~ N(mu, 1)."""
    scores, labels = siblini_window(n, pi, mu1=positive_mean, mu0=0.0, rng=rng)
    return scores, labels.astype(np.int8)


def daily_prior(spec: StreamSpec, rng: np.random.Generator, index: int) -> float:
    """The day's positive ratio under the scenario."""
    if spec.scenario == "degradation":
        return spec.constant_pi
    return float(np.exp(rng.uniform(np.log(spec.pi_low), np.log(spec.pi_high))))


def daily_positive_mean(spec: StreamSpec, index: int) -> float:
    """The positives' mean score: constant, or drifting down from ``change_day``."""
    if spec.scenario == "prior_drift" or index < spec.change_day:
        return spec.positive_mean
    return spec.positive_mean - spec.drift_per_day * (index - spec.change_day + 1)


def stream(spec: StreamSpec) -> Iterator[Day]:
    """The scenario's days, in order, reproducible from ``spec.seed``."""
    rng = np.random.default_rng(spec.seed)
    for index in range(spec.days):
        pi = daily_prior(spec, rng, index)
        mu = daily_positive_mean(spec, index)
        scores, labels = gaussian_window(rng, spec.rows_per_day, pi, mu)
        yield Day(index, day_start(index), pi, mu, scores, labels)


def batch_body(day: Day, *, prefix: str = "p", segment: str | None = None) -> dict[str, Any]:
    """The day as one columnar ingest batch (``POST /v1/models/{name}/batches``)."""
    n = day.scores.size
    start = np.datetime64(day.window_start.replace(tzinfo=None), "ms")
    offsets = (np.arange(n) * (86_400_000 // max(n, 1))).astype("timedelta64[ms]")
    stamps = np.char.add(np.datetime_as_string(start + offsets, unit="ms"), "Z")
    columns: dict[str, list[Any]] = {
        "id": [f"{prefix}-{day.index}-{i}" for i in range(n)],
        "timestamp": stamps.tolist(),
        "score": day.scores.tolist(),
        "label": day.labels.astype(int).tolist(),
    }
    if segment is not None:
        columns["segment"] = [segment] * n
    return {"batch_id": f"{prefix}-{day.index}", "columns": columns}


def post_batch(client: httpx.Client, model: str, body: dict[str, Any]) -> None:
    """POST a batch (:func:`batch_body`) to ``model`` over ``client`` and assert a 201.

    The client's encoder writes the body: it takes numpy scalars, which the standard json
    module refuses.
    """
    response = client.post(
        f"/v1/models/{model}/batches",
        content=json_arrays.dumps(body),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 201, response.text
