"""Domain gauges for Prometheus, read from the database at scrape time.

A custom collector (prometheus_client's "custom collectors") rather than gauges set by the worker:
every API replica exports the same values, whichever process computed a window, and nothing is
lost when a process restarts. The rendered page is cached for a few seconds (``ScrapePage``),
so several Prometheus servers (or a fast scrape interval) cost one set of queries per TTL.
Names and labels follow docs/interfaces.md section 3; an undefined value is simply not
exported (never NaN). An
enumerated value (an alert state, a verdict) is one StateSet metric with the state as a label,
not one metric name per value.

Three views per (model, segment): the *newest window* (``calmon_window_*``: what just came in,
its labels usually incomplete), the *alert state* (``calmon_alert_*``: the drop detector after
the newest mature window, which is what pages), and the *nowcast* (``calmon_nowcast_*``: the
newest window's fraud rate and metrics estimated from its scores alone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from prometheus_client.core import (
    Metric,
)
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session, sessionmaker

from app.db.clock import database_now
from app.observability.domain_families import budget_families, core_families, detail_families
from app.observability.series_budget import Budget, merged, series_count, split_intervals
from app.observability.snapshot import read_detail, read_snapshot

logger = logging.getLogger(__name__)


class CalmonCollector(Collector):
    """Exports the newest window of every (model, segment) and the worker's state, within the
    series budget (app/observability/series_budget.py).

    Parameters
    ----------
    session_factory:
        Returns the app's sessionmaker; called at scrape time because the engine is created in
        the app's lifespan, after the collector is registered.
    lease_seconds:
        The workers' lease period (the liveness of a heartbeat written before migration 0021
        is judged in lease periods).
    max_series:
        The series budget.

    Each collection reads the database; /metrics renders (and so collects) at most once per
    5 s however many scrape (app/observability/prometheus.py ``ScrapePage``).
    """

    def __init__(
        self,
        session_factory: Callable[[], sessionmaker[Session]],
        *,
        lease_seconds: float,
        max_series: int,
    ) -> None:
        self._session_factory = session_factory
        self._lease_seconds = lease_seconds
        self._max_series = max_series

    def describe(self) -> Iterable[Metric]:
        # Registering must not query the database (there is no engine yet at that point).
        return ()

    def collect(self) -> Iterable[Metric]:
        """The families, read from the database."""
        with self._session_factory()() as session:
            return self._read(session)

    def _read(self, session: Session) -> list[Metric]:
        # The database's clock, which heartbeats are written by (app.db.clock).
        snapshot = read_snapshot(
            session, now=database_now(session), lease_seconds=self._lease_seconds
        )
        budget = Budget(self._max_series)
        budget.always(core_families(snapshot))
        plain, intervals = split_intervals(detail_families(read_detail(session, "all")))
        if budget.offer("window_detail", plain):
            pairs_all, pairs_others = snapshot.segment_pairs
            estimate = series_count(plain) * pairs_others / max(pairs_all, 1)
            if budget.may_fit("segment_detail", estimate):
                others, more = split_intervals(detail_families(read_detail(session, "others")))
                if budget.offer("segment_detail", others):
                    budget.offer("intervals", intervals + more)
        if any(budget.dropped.values()):
            left_out = [tier for tier, out in budget.dropped.items() if out]
            logger.warning(
                "metrics_series_budget_exceeded",
                extra={
                    "detail": f"/metrics exports {budget.series} series within "
                    f"CALMON_METRICS_MAX_SERIES={self._max_series}; left out: {left_out}"
                },
            )
        return [*merged(budget.kept), *budget_families(budget)]
