"""The label-free estimates of a window (the nowcast) as the monitoring domain uses them.

For a window whose labels have not arrived, app.metrics.nowcast estimates its fraud rate and its
expected precision, F1 and average precision from its scores alone, assuming a pure prior shift
(the reference's class-conditional score distributions hold; only the mix moved). This module
decides what calmon does with that:

* which windows get one: those after their segment's frozen reference (before it, the estimate
  would be fitted to its own rows), labelled or not, so that once labels arrive the estimate
  stands beside the realised value and the estimator's accuracy is visible;
* when the scores are a **score shift**: the fitted mixture does not explain them (a test's
  p-value under :data:`MISFIT_P_VALUE`), so P(score | class) moved: the model or its inputs
  changed, which no change of the fraud rate explains. The tests run on the window alone (a
  sudden change) and on it together with the windows before it, up to :data:`RECENT_WINDOWS`
  (a lasting change too small for one window: their counts add up, and under a pure prior
  shift their sum is still a mixture of the reference's two distributions). An unjudged
  window's provisional verdict is then ``score_shift``: a warning, never a page (labels decide
  whether performance dropped);
* the stored form (``window_metrics.nowcast``) that the API and Prometheus read.

What scores alone cannot tell apart: fraud scores that moved *within* the range where frauds
and legitimate rows overlap look like a different fraud rate (a weaker model scoring its frauds
lower looks like fewer frauds). The tilt test catches part of it at hundreds of frauds a window;
the rest waits for the labels (README, "Before the labels arrive").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.metrics import Fit, Nowcast
from app.metrics.burst_dispersion import NO_DISPERSION, Dispersion

MISFIT_P_VALUE = 0.001
"""Scores are a shift when a test's p-value is below this (two tests, on the window alone and
on the recent windows together: the false-warning rate under pure prior drift is measured in
bench/nowcast.py)."""
RECENT_WINDOWS = 7
"""The recent test pools a window with up to six windows before it (a week of daily windows)."""
MIN_BIN_ROWS = 2000
"""A model's score bins are cut from its first window with at least this many rows: the bins'
top tail stops where about three of that window's scores lie above (app.metrics.bin_edges)."""
NOWCASTS_PER_PASS = 200
"""Nowcasts a worker pass computes at most (~20 ms each): a reference frozen late, or moved,
leaves every later window to estimate again; the rest waits for the next pass."""


def fit_p_value(fit: Fit) -> float:
    """The smaller p-value of a fit's two tests (the G-test and the fraud-score tilt)."""
    return min(fit.p_value, fit.tilt_p_value)


@dataclass(frozen=True)
class RecentFit:
    """The misfit tests on a window and the windows before it, their counts added up."""

    windows: int
    fit: Fit


def shift_reason(fit: Fit, recent: RecentFit | None = None) -> str | None:
    """Why the window's scores are a score shift, or None if the mixture explains them."""
    own = fit_p_value(fit)
    if own < MISFIT_P_VALUE:
        where, p = "this window's scores", own
    elif recent is not None and fit_p_value(recent.fit) < MISFIT_P_VALUE:
        where, p = (
            f"the scores of its last {recent.windows} windows together",
            fit_p_value(recent.fit),
        )
    else:
        return None
    return (
        f"score shift: the reference's fraud and legitimate score distributions explain {where} "
        f"at no fraud rate (p = {p:.2g} < {MISFIT_P_VALUE:g}); the model or its inputs changed; "
        "labels will tell whether performance dropped"
    )


def stored_nowcast(
    estimate: Nowcast,
    reference_version: int,
    recent: RecentFit | None = None,
    *,
    dispersion: Dispersion = NO_DISPERSION,
) -> dict[str, Any]:
    """The JSON form of ``window_metrics.nowcast``; ``dispersion``: the reference's frauds'
    dispersion the tests divided out (each test's own divisor is in its fit)."""
    return {
        **estimate.to_dict(),
        "reference_version": reference_version,
        "dispersion": dispersion.to_dict(),
        "fit_p_value": fit_p_value(estimate.fit),
        "recent_fit": (
            {"windows": recent.windows, **recent.fit.to_dict()} if recent is not None else None
        ),
        "recent_fit_p_value": fit_p_value(recent.fit) if recent is not None else None,
        "score_shift": shift_reason(estimate.fit, recent) is not None,
    }
