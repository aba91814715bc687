"""How the demo's stream reaches calmon: a backfill of history, then one night at a time.

The backfill sends the older days' predictions with the labels that had come in by the night
after the last of them, each with its ``labelled_at`` and ``source``, as a team loading its
history would. Each live night then sends the day that just ended (no label can have come yet)
and that night's label export (feedback on the day before's alerts, chargebacks for frauds of
the weeks before), waits for the worker and reads the alert state, as a team living through it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from app.client.http import CalmonClient
from app.demo.stream import CHARGEBACK, FEEDBACK, NO_LABEL, DemoDay, as_datetimes, midnight

FAILING_FOR = 20.0
"""Seconds a window may keep failing before the demo gives up (the worker retries it)."""


@dataclass(frozen=True)
class Night:
    """One live night: what came in, and the alert state of segment ``all`` after it."""

    night: datetime
    """The export's instant: the midnight that closed ``day``."""
    day: DemoDay
    feedback: int
    chargebacks: int
    alert: dict[str, Any]

    @property
    def paging(self) -> bool:
        """The segment pages (on any signal)."""
        return bool(self.alert["state"] == "drop")

    @property
    def signals(self) -> list[str]:
        """What holds the page."""
        signals: list[str] = self.alert["signals"]
        return signals


def backfill(client: CalmonClient, model: str, history: list[DemoDay]) -> tuple[int, int]:
    """Send ``history`` with the labels that came in by the night after its last day; the
    predictions and labels sent."""
    night = midnight(history[-1].day + timedelta(days=1))
    rows = labels = 0
    for day in history:
        arrived = day.labels_by(night)
        sent = client.send(
            model,
            ids=day.ids,
            timestamps=day.timestamps,
            scores=day.scores,
            labels=np.where(arrived, day.label, np.nan),
            labelled_at=as_datetimes(np.where(arrived, day.labelled_at, NO_LABEL)),
            sources=[s if a else None for s, a in zip(day.source, arrived, strict=True)],
            prefix=f"demo-{day.day.isoformat()}",
        )
        rows += sent.rows
        labels += int(arrived.sum())
    return rows, labels


def live_night(
    client: CalmonClient, model: str, days: list[DemoDay], day: DemoDay, timeout: float
) -> Night:
    """Send ``day`` and the export of the night that closes it, wait for the worker, read the
    alert state. ``days``: every day sent so far (the export covers them all)."""
    client.send(
        model,
        ids=day.ids,
        timestamps=day.timestamps,
        scores=day.scores,
        prefix=f"demo-{day.day.isoformat()}",
    )
    night = midnight(day.day + timedelta(days=1))
    ids: list[str] = []
    labels: list[int] = []
    sources: list[str | None] = []
    for earlier in days:
        for i in np.flatnonzero(earlier.labels_at(night)):
            ids.append(earlier.ids[i])
            labels.append(int(earlier.label[i]))
            sources.append(earlier.source[i])
    if ids:
        client.send_labels(
            model,
            ids=ids,
            labels=labels,
            labelled_at=[night.isoformat()] * len(ids),
            sources=sources,
        )
    wait_worker(client, model, timeout, poll=0.1)
    alert = next(s for s in client.alerts(model)["segments"] if s["segment"] == "all")
    return Night(night, day, sources.count(FEEDBACK), sources.count(CHARGEBACK), alert)


def wait_worker(client: CalmonClient, model: str, timeout: float, *, poll: float = 0.5) -> None:
    """Until no window of the model waits; says so if no worker is seen at all."""
    started = time.monotonic()
    warned = False
    failing_since: float | None = None
    while time.monotonic() < started + timeout:
        status = client.status(model)
        # A failure is retried (a busy database, a lost lease); one that lasts is not passing.
        if not status["failing_windows"]:
            failing_since = None
        elif failing_since is None:
            failing_since = time.monotonic()
        elif time.monotonic() > failing_since + FAILING_FOR:
            raise RuntimeError(
                f"the worker keeps failing on {status['failing_windows']} windows of {model}: "
                "see its log"
            )
        if status["dirty_windows"] == 0:
            return
        if not status["workers"] and not warned and time.monotonic() > started + 15:
            print(
                "no worker heartbeat yet: is a `calmon worker` running for this service?",
                file=sys.stderr,
                flush=True,
            )
            warned = True
        time.sleep(poll)
    raise TimeoutError(f"the worker did not compute the windows within {timeout:.0f} s")
