"""The README's first steps, replayed: its shell blocks run in bash against a real server, and
the answers are what the README shows.

`.venv/bin/calmon` in the blocks is this checkout's CLI, run in the directory of the server's
database (as the README says to); `http://127.0.0.1:8000` is the test server's address.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import REPO_ROOT, clean_environment, running_server

README = (REPO_ROOT / "README.md").read_text()
MARK = "@@@ next block @@@"


def blocks(heading: str, language: str) -> list[str]:
    """The fenced ``language`` blocks of the section that starts with ``heading``."""
    start = README.index(f"\n{heading}\n")
    end = README.find("\n#", start + len(heading) + 2)
    section = README[start : end if end != -1 else None]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def run_blocks(scripts: list[str], base_url: str, workdir: Path) -> list[str]:
    """Run the blocks in one bash (variables carry over); each block's stdout."""
    script = f"\necho '{MARK}'\n".join(scripts).replace("http://127.0.0.1:8000", base_url)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=workdir,
        env=clean_environment({"PYTHONPATH": str(REPO_ROOT)}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [output.strip() for output in done.stdout.split(MARK)]


def readme_json(heading: str, index: int = 0) -> Any:
    return json.loads(blocks(heading, "json")[index])


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("curl") is None, reason="the README's examples use curl")
def test_first_steps_with_curl_answer_what_the_readme_shows(tmp_path: Path) -> None:
    calmon = tmp_path / ".venv" / "bin" / "calmon"
    calmon.parent.mkdir(parents=True)
    calmon.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m app.cli "$@"\n')
    calmon.chmod(calmon.stat().st_mode | stat.S_IEXEC)
    # The server runs on the embedded default of tmp_path, as `calmon serve` started there.
    url = f"sqlite:///{tmp_path / 'var' / 'calmon.sqlite3'}"
    with running_server(url, log_dir=tmp_path) as server:
        _tokens, model, batch = run_blocks(
            blocks("## First steps with curl", "bash"), server.base_url, tmp_path
        )
        assert json.loads(model)["timezone"] == "Europe/Paris"
        assert json.loads(batch) == readme_json("### Responses and errors")

        deadline = time.monotonic() + 60
        while True:  # until the embedded worker has computed the window
            [series] = run_blocks(
                blocks("### A metric over time", "bash"), server.base_url, tmp_path
            )
            answer = json.loads(series)
            if answer["points"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    shown = readme_json("### A metric over time")
    assert [p["window_start"] for p in answer["points"]] == [
        p["window_start"] for p in shown["points"]
    ]
    assert set(shown) <= set(answer)
    assert set(shown["points"][0]) <= set(answer["points"][0])
