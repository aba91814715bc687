"""A request about to be sent again, and the default wait before it."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Retry:
    """A request about to be sent again: why, in how many seconds, and which re-send of how
    many (``attempt`` 1 is the first)."""

    attempt: int
    retries: int
    delay: float
    reason: str


def sleep_through(retry: Retry) -> None:
    """The default wait before a retry: a silent sleep (a terminal shows a countdown instead)."""
    time.sleep(retry.delay)
