"""When a window's labels are complete enough to judge it.

Fraud labels arrive days to weeks after the prediction, and the first to arrive are biased (a
chargeback comes before a "this was fine"), so a window is judged only once it is *mature*.
There are two ways a model's windows mature (:class:`MaturityRule`):

* **by label coverage** (the default, for teams that send explicit "legitimate" labels): the
  window's labelled share reached ``min_label_coverage`` and it holds labelled negatives;
* **by a label horizon** (``label_horizon_days``, for fraud-only feeds: chargebacks and alert
  feedback, nobody labels a transaction legitimate): a row with no fraud label
  ``label_horizon_days`` after its window ended counts as legitimate, so the window is mature
  once the model's clock has passed that instant. The clock is the newest event the model has
  received (a prediction's timestamp or a label's ``labelled_at``), not the wall clock: a
  backfill of history and a replay then mature the same windows at the same points of the
  stream as living through it did.

Until then a window has values (the best estimate so far) but no verdict, and the alert state
rests on the newest mature window instead (and on the early evidence of app/monitoring/early).
A fraud label arriving after a window matured (a late chargeback) is not lost: the window's
values are recomputed with it, only its verdict, issued at maturity, stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from app.monitoring.pi0 import WindowLabels


@dataclass(frozen=True)
class MaturityRule:
    """How a model's windows mature (see the module docstring).

    ``horizon`` set means a label horizon (``label_horizon_days``); ``clock`` is then the
    model's clock (None: it has received nothing) and ``window_length`` the windows' nominal
    length (their end is their start plus it).
    """

    min_label_coverage: float
    horizon: timedelta | None = None
    clock: datetime | None = None
    window_length: timedelta = timedelta(days=1)

    def due(self, window_start: datetime) -> datetime | None:
        """When a window matures under a label horizon (None under label coverage)."""
        if self.horizon is None:
            return None
        return window_start + self.window_length + self.horizon

    def immaturity(self, window: WindowLabels) -> str | None:
        """Why ``window`` is not mature yet, or None if it is."""
        due = self.due(window.window_start)
        if due is not None:
            if self.clock is not None and self.clock >= due:
                return None
            seen = self.clock.isoformat() if self.clock is not None else "nothing received"
            return (
                f"waiting for labels: rows without a fraud label count as legitimate from "
                f"{due.isoformat()} (label_horizon_days); the model's clock is at {seen}"
            )
        coverage = window.label_coverage
        if coverage is None or coverage < self.min_label_coverage:
            return (
                f"waiting for labels: coverage {coverage or 0.0:.3f} "
                f"below min_label_coverage {self.min_label_coverage:.3f}"
            )
        if window.negatives <= 0:
            return "waiting for labels: no labelled negatives yet"
        return None

    def is_mature(self, window: WindowLabels) -> bool:
        """Whether ``window`` may be judged (see :meth:`immaturity`)."""
        return self.immaturity(window) is None
