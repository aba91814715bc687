"""End to end: a fraud-only label feed through a real `calmon serve` and a `calmon worker` process
beside it on PostgreSQL, sent with the client.

The feed is the demo's (app/demo/stream.py): no "legitimate" label but investigators clearing
alerts, feedback on 90% of the alerts the next day, chargebacks for the other frauds within the
label horizon, a few frauds never reported; every label with its ``labelled_at`` (the nightly
export) and ``source``. History is backfilled with the labels that had come in by then, then
the newest days arrive a night at a time, and the model breaks a few nights before the end.
The page must come on the broken days' early evidence while they are still waiting for their
labels, and go on, without an ``ok`` in between, as a judged page once they mature.

PostgreSQL only, the deployment this mirrors. On SQLite each part is covered without the
three-week replay: `calmon serve` with its embedded worker paging on this feed's early labels
(the README's `calmon demo`, tests/integration/test_readme_replay.py), early and judged pages
through the API on both backends (tests/integration/test_early_api.py, test_detector_api.py),
and the hand-over from the one to the other, which is no query but a rule
(tests/monitoring/test_early.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.client.http import CalmonClient
from app.demo.feed import Night, backfill, live_night, wait_worker
from app.demo.stream import LabelFeed, StreamPlan, days, midnight
from tests.support.databases import Backend
from tests.support.server import running_server
from tests.support.worker_process import running_workers

pytestmark = pytest.mark.e2e

ENV = {
    "CALMON_AUTH_DISABLED": "true",
    "CALMON_WORKER_POLL_SECONDS": "0.2",
    "CALMON_WORKER_HEARTBEAT_SECONDS": "0.5",
    # 200 replicates keep the test inside its time budget; production default is 1000.
    "CALMON_BOOTSTRAP_REPLICATES": "200",
}
HORIZON_DAYS = 10
"""Short, so that the broken days mature within the test (chargebacks still take 2 to 10 days)."""
DAYS = 42
ONSET = 30
"""The first broken day: after the reference (days 0-13) matured at night 24, and some calm."""
LIVE_FROM = 28
"""Days before it are backfilled; from it on, a night at a time."""
MODEL = "fraud-only"
# Any past days: calmon goes by the model's clock (the newest event it received), not the wall's.
PLAN = StreamPlan(
    days=DAYS,
    rows_per_day=4_000,
    last_day=date(2026, 3, 31),
    degraded_days=DAYS - ONSET,
    seed=11,
    feed=LabelFeed(horizon_days=HORIZON_DAYS),
)


@contextmanager
def _service(database_url: str, tmp_path: Path) -> Iterator[str]:
    """The API and a `calmon worker` beside it."""
    api = {**ENV, "CALMON_WORKER_EMBEDDED": "false"}
    with (
        running_server(database_url, env=api, log_dir=tmp_path) as server,
        running_workers(database_url, tmp_path, 1, ENV),
    ):
        yield server.base_url


def _day(point: dict[str, Any]) -> date:
    return date.fromisoformat(point["window_start"][:10])


def _check_withheld(client: CalmonClient, onset: date) -> None:
    """The broken days are not mature: the series withholds their measured values and shows
    their early estimates; the onset's detail says what its estimate rests on."""
    points = client.metrics(MODEL, "average_precision")
    broken = [p for p in points if _day(p) >= onset]
    assert broken
    for point in broken:
        assert point["mature"] is False, point
        assert point["regular"] is None, point
        assert point["calibrated"] is None, point
        assert point["verdict"] in {"insufficient_data", "score_shift"}, point
        assert point["early"] is not None, point
    looked = [p["early"] for p in broken if p["early"]["look"] >= 1]
    assert any(e["value"] is not None for e in looked), looked
    # Each either estimates, with an interval, or says why not (no fraud label yet).
    assert all((e["value"] is None) == (e["ci"] is None) for e in looked), looked
    assert all(e["value"] is not None or e["reason"] for e in looked), looked
    start = next(p["window_start"] for p in points if _day(p) == onset)
    early = client.window(MODEL, start)["early"]
    assert early["labels_so_far"]["by_source"].get("feedback", 0) > 0, early
    assert early["evidence"]["increment"] > 0, early
    # Judged days before the break keep their measured values.
    assert any(p["mature"] and p["calibrated"] is not None for p in points if _day(p) < onset)


def test_a_fraud_only_feed_pages_early_then_on_the_judged_windows(
    backend: Backend, database_url: str, tmp_path: Path
) -> None:
    if backend != "postgresql":
        pytest.skip("the SQLite service's parts are covered elsewhere (the module docstring)")
    stream = days(PLAN)
    onset = PLAN.onset
    matured = onset + timedelta(days=1 + HORIZON_DAYS)  # the night the first broken day matures
    assert midnight(PLAN.last_day).date() >= matured, "the plan must reach the hand-over"
    with _service(database_url, tmp_path) as base_url, CalmonClient(base_url) as client:
        client.create_model(
            MODEL,
            0.5,
            reference_windows=14,
            reference_min_positives=100,
            label_horizon_days=HORIZON_DAYS,
        )
        backfill(client, MODEL, stream[:LIVE_FROM])
        wait_worker(client, MODEL, 120)
        nights: list[Night] = []
        for number in range(LIVE_FROM, DAYS):
            night = live_night(client, MODEL, stream[: number + 1], stream[number], 120)
            nights.append(night)
            if night.paging and len([n for n in nights if n.paging]) == 1:
                assert night.signals == ["early"], night.alert
                _check_withheld(client, onset)
        final_points = client.metrics(MODEL, "average_precision")

    seen = _states(nights)
    assert not any(n.paging for n in nights if n.day.day < onset), seen
    first = next((n for n in nights if n.paging), None)
    assert first is not None, seen
    # The first broken day is looked at from the night that closes it, gets its feedback a
    # night later and its first chargebacks over the next nights.
    assert first.night - midnight(onset) <= timedelta(days=5), seen
    after = nights[nights.index(first) :]
    assert all(n.paging for n in after), seen  # never an ok in between
    assert all(n.signals == ["early"] for n in after if n.night.date() < matured), seen
    # From the night the first broken day matures, the judged windows take over, for good.
    judged = [i for i, n in enumerate(after) if n.signals == ["cusum"]]
    assert judged, seen
    assert judged == list(range(judged[0], len(after))), seen
    assert after[judged[0]].night.date() >= matured, seen
    points = {_day(p): p for p in final_points}
    assert points[onset]["mature"] is True
    assert points[onset]["verdict"] == "performance_drop", points[onset]


def _states(nights: list[Night]) -> list[tuple[str, str, list[str]]]:
    return [(n.night.date().isoformat(), n.alert["state"], n.signals) for n in nights]
