"""The series budget of /metrics: past it, detail goes first and the alert state never.

A scrape of a thousand models with ten segments each would be one and a half million series,
more than Prometheus should take every 15 s from one target and more than one rendering can
serve within its scrape timeout. The page is therefore built in tiers, each kept whole or left
out whole, in this order of what is kept (and so dropped in the reverse order):

0. always: every alert family (``calmon_alert_*``: what pages, and why), the models' own gauges
   and the service's health;
1. ``window_detail``: the newest windows' values, nowcasts and early estimates of the segment
   "all", without their intervals;
2. ``segment_detail``: the same for every other segment;
3. ``intervals``: the 95% intervals (``*_ci_lower``, ``*_ci_upper``) of tiers 1 and 2.

A tier is kept if the series so far and its own fit in ``max_series``; once one is left out,
so are the ones after it. A tier is only read and built when it may fit (segment detail is
estimated from the segment "all"'s), so a large deployment pays for the series it exports, not
for the ones it drops. What was left out is reported in ``calmon_metrics_detail_dropped``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import Metric

TIERS = ("window_detail", "segment_detail", "intervals")
INTERVAL_SUFFIXES = ("_ci_lower", "_ci_upper")


def series_count(families: Iterable[Metric]) -> int:
    """Series (samples) in ``families``."""
    return sum(len(metric.samples) for metric in families)


def split_intervals(families: Iterable[Metric]) -> tuple[list[Metric], list[Metric]]:
    """``families`` as (the ones that are no interval, the intervals)."""
    plain: list[Metric] = []
    intervals: list[Metric] = []
    for metric in families:
        (intervals if metric.name.endswith(INTERVAL_SUFFIXES) else plain).append(metric)
    return plain, intervals


@dataclass
class Budget:
    """The series exported so far against ``max_series``, and the tiers left out."""

    max_series: int
    series: int = 0
    kept: list[Metric] = field(default_factory=list)
    dropped: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(TIERS, False))

    def always(self, families: Iterable[Metric]) -> None:
        """Export ``families`` whatever the budget (tier 0)."""
        self._keep(list(families))

    def may_fit(self, tier: str, estimate: float) -> bool:
        """Whether ``tier``, of about ``estimate`` series, is worth reading and building: no
        earlier tier was left out, and it would fit. If not, it is left out."""
        if any(self.dropped.values()) or self.series + estimate > self.max_series:
            self.drop_from(tier)
            return False
        return True

    def offer(self, tier: str, families: Sequence[Metric]) -> bool:
        """Keep ``families`` (all of ``tier``) if they fit; else leave out it and what follows."""
        if any(self.dropped.values()) or self.series + series_count(families) > self.max_series:
            self.drop_from(tier)
            return False
        self._keep(list(families))
        return True

    def drop_from(self, tier: str) -> None:
        """Leave out ``tier`` and every tier after it."""
        for name in TIERS[TIERS.index(tier) :]:
            self.dropped[name] = True

    def _keep(self, families: list[Metric]) -> None:
        self.kept += families
        self.series += series_count(families)


def merged(families: Iterable[Metric]) -> list[Metric]:
    """One family per name (a name may come from several tiers): the exposition format allows
    a metric's HELP and TYPE once."""
    by_name: dict[str, Metric] = {}
    for metric in families:
        first = by_name.setdefault(metric.name, metric)
        if first is not metric:
            first.samples += metric.samples
    return list(by_name.values())
