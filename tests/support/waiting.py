"""The one polling loop of the suite: wait until something the test cannot await holds.

Processes, scrapes, logs and the embedded worker change on their own clock; a test waits for
the state it needs (never for a fixed time) and fails naming what it waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    condition: Callable[[], T | None],
    what: str,
    *,
    timeout: float,
    poll: float = 0.2,
    diagnostics: Callable[[], str] | None = None,
) -> T:
    """Call ``condition`` every ``poll`` seconds until it returns a truthy value, and return it.

    After ``timeout`` seconds (checked once more at the end) raise AssertionError naming
    ``what``, followed by ``diagnostics()`` if given. An exception from ``condition`` (a process
    that exited, say) ends the wait at once.
    """
    deadline = time.monotonic() + timeout
    timeout = max(timeout, 0.0)  # a shared deadline may already have passed: one last check
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() >= deadline:
            detail = f"\n{diagnostics()}" if diagnostics is not None else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(poll)
