"""Processes with a skewed wall clock: libfaketime (Debian package faketime) preloaded.

Preloaded into the process itself (the faketime command would fork, and a signal to it would
not reach the child). Only the wall clock is skewed, as NTP trouble skews it; the monotonic
clock that times intervals stays true.
"""

from __future__ import annotations

import glob
import os

import pytest

from tests.support.databases import Backend

LIBRARIES = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))


def skewed(offset: str) -> dict[str, str]:
    """Environment variables that run a process ``offset`` (``+15m``, ``-2d``) off true time."""
    return {"LD_PRELOAD": LIBRARIES[0], "FAKETIME": offset, "DONT_FAKE_MONOTONIC": "1"}


def require_skewable(backend: Backend) -> None:
    """Skip unless a process's clock can be skewed apart from the database's: PostgreSQL (SQLite
    runs inside the process, on its clock) and libfaketime (required under CI=true)."""
    if backend != "postgresql":
        pytest.skip("SQLite runs inside the process, on the process's own clock")
    if not LIBRARIES:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but libfaketime is missing", pytrace=False)
        pytest.skip("needs libfaketime (Debian package faketime)")
