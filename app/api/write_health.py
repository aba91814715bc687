"""Whether this API's writes reach the database now: the latch /readyz reads besides its probe.

The probe's own write (app.db.health) is small and comes through a fresh connection, so it
succeeds where real writes fail: a batch's statement cut by ``statement_timeout``, a full
tablespace the probe's one-row update never needs to extend, pooled connections left read-only
(to a demoted primary), a model row held by a long transaction. The API therefore remembers its
own writes' outcomes: a write request that failed for a database reason turns /readyz red, and
the next write that commits turns it green.

A load balancer stops sending writes to a red instance, so a write may never come to clear the
latch; the probe's own write clears it instead, but only once no request's write has failed
for ``PROBE_TRUSTED_AFTER_SECONDS``: recent evidence from real writes outweighs the probe's.
Either way the probe tells the truth within that time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

PROBE_TRUSTED_AFTER_SECONDS = 2.0
"""How long after a request's failed write the probe's own successful write is not enough."""


@dataclass(frozen=True)
class WriteFailure:
    """The newest failed write no write has succeeded since."""

    reason: str
    at: float  # monotonic seconds


class WriteHealth:
    """The outcome of this process's newest write; thread-safe (requests run in a pool)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._failure: WriteFailure | None = None

    def failed(self, reason: str) -> None:
        """A request's write failed for a database reason (``reason``: app.db.trouble)."""
        with self._lock:
            self._failure = WriteFailure(reason, self._clock())

    def succeeded(self) -> None:
        """A request's write committed."""
        with self._lock:
            self._failure = None

    def after_probe_write(self) -> tuple[WriteFailure, float] | None:
        """The probe's own write succeeded: the failure that still stands (and how many
        seconds ago it was), or None once the writes are trusted again."""
        with self._lock:
            if self._failure is None:
                return None
            age = self._clock() - self._failure.at
            if age >= PROBE_TRUSTED_AFTER_SECONDS:
                self._failure = None
                return None
            return self._failure, age
