"""Replaying the documentation's examples: the README and the docs site's pages, their sections
and fenced blocks, one bash running them in order, and the comparison of what a block prints with
what the page shows (tests/integration/test_readme_replay.py and its docs siblings)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import REPO_ROOT, clean_environment
from tests.support.waiting import wait_for

PAGES = {
    path.relative_to(REPO_ROOT).as_posix(): path.read_text()
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
}
"""The README and the docs site's pages, by path: the examples replayed here live on them."""


MARK = "@@@ next block @@@"


README_URL = "http://127.0.0.1:8000"


needs_curl = pytest.mark.skipif(
    shutil.which("curl") is None, reason="the README's examples use curl"
)


def section(heading: str) -> str:
    """The text under ``heading`` (at any level, on the one page that has it) to the next
    heading, code fences included: a ``#`` comment inside a fenced block is not a heading."""
    found = [
        (path, match)
        for path, text in PAGES.items()
        for match in re.finditer(rf"^#+ {re.escape(heading)}$", text, flags=re.MULTILINE)
    ]
    assert len(found) == 1, f"the heading {heading!r} should be on one page, once: {found}"
    [(path, match)] = found
    lines = PAGES[path][match.start() :].splitlines()
    kept = [lines[0]]
    fenced = False
    for line in lines[1:]:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            break
        kept.append(line)
    return "\n".join(kept)


def blocks(heading: str, language: str) -> list[str]:
    """The fenced ``language`` blocks of the section that starts with ``heading``."""
    return re.findall(rf"```{language}\n(.*?)```", section(heading), flags=re.DOTALL)


def readme_json(heading: str, index: int = 0) -> Any:
    return json.loads(blocks(heading, "json")[index])


def replaced(script: str, replacements: Mapping[str, str]) -> str:
    """``script`` with each key replaced; a key the README no longer has fails the test (the
    README and this test change together)."""
    for old, new in replacements.items():
        assert old in script, f"the README's block no longer contains {old!r}:\n{script}"
        script = script.replace(old, new)
    return script


def link_venv(workdir: Path) -> None:
    """``workdir/.venv``: the environment running the tests, which `.ci/run` installed this
    checkout into with the README's commands (checked by the quick start's test)."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the README's blocks run .venv/bin/calmon: run the tests from a venv")
    assert (Path(sys.prefix) / "bin" / "calmon").exists(), "calmon is not installed in the venv"
    (workdir / ".venv").symlink_to(sys.prefix, target_is_directory=True)


def run_blocks(
    scripts: list[str], base_url: str, workdir: Path, env: Mapping[str, str] | None = None
) -> list[str]:
    """Run the blocks in one bash (variables carry over); each block's stdout."""
    script = f"\necho '{MARK}'\n".join(scripts).replace(README_URL, base_url)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=workdir,
        env=clean_environment(env or {}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [output.strip() for output in done.stdout.split(MARK)]


@contextmanager
def background_script(
    script: str, workdir: Path, env: Mapping[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """``script`` in bash, in a process group of its own (its `calmon serve` in the foreground,
    a `calmon worker &` beside it); the whole group gets SIGTERM afterwards, as Ctrl-C would
    reach it, and nothing else does."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=workdir,
            env=clean_environment(env),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        for sig, wait in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(wait)
                # The group's other members (the worker) get the same deadline.
                deadline = time.monotonic() + wait
                while _group_alive(process.pid) and time.monotonic() < deadline:
                    time.sleep(0.1)
                if not _group_alive(process.pid):
                    break
            except subprocess.TimeoutExpired:
                continue


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_ready(base_url: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    def ready() -> bool:
        assert process.poll() is None, f"the block exited {process.returncode}:\n{log.read_text()}"
        try:
            return httpx.get(f"{base_url}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    wait_for(ready, f"{base_url} ready", timeout=timeout, diagnostics=log.read_text)


def json_documents(output: str) -> list[Any]:
    """The JSON documents of ``output`` in order (curl prints one after the other, with no
    line break between them)."""
    decoder, documents, at = json.JSONDecoder(), [], 0
    while at < len(output):
        document, at = decoder.raw_decode(output, at)
        documents.append(document)
        while at < len(output) and output[at].isspace():
            at += 1
    return documents


NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def assert_printed(block: str, shown: str) -> None:
    """The lines of ``block`` appear in ``shown`` in a row, with the same words and numbers
    within 2% (or 0.02): the stream is seeded, but the worker's floating point may differ in a
    last digit from one machine to another. Dates are not compared: the demo's days end
    yesterday. An interval's ends (numbers in brackets) are compared within 0.05: they are
    bootstrap percentiles, drawn with seeds that follow the window's date, which moves with the
    day the demo runs (seen: a lower end of 0.44 read 0.46 the next day)."""
    wanted = [_undated(line) for line in block.strip().splitlines()]
    lines = [_undated(line) for line in shown.splitlines()]
    first = [i for i, line in enumerate(lines) if _words(line) == _words(wanted[0])]
    assert first, f"{wanted[0]!r} is not in the output:\n{shown}"
    got = lines[first[0] : first[0] + len(wanted)]
    assert [_words(line) for line in got] == [_words(line) for line in wanted], shown
    for expected, line in zip(wanted, got, strict=True):
        for a, b in zip(_numbers(_outside(expected)), _numbers(_outside(line)), strict=True):
            assert abs(a - b) <= max(0.02, 0.02 * a), f"README: {expected}\nshown:  {line}"
        for a, b in zip(_numbers(_inside(expected)), _numbers(_inside(line)), strict=True):
            assert abs(a - b) <= 0.05, f"README: {expected}\nshown:  {line}"


def _inside(line: str) -> str:
    return " ".join(re.findall(r"\[([^]]*)\]", line))


def _outside(line: str) -> str:
    return re.sub(r"\[[^]]*\]", " ", line)


def _undated(text: str) -> str:
    return re.sub(r"\d{4}-\d{2}-\d{2}", "DATE", text)


def _words(line: str) -> str:
    return " ".join(NUMBER.sub("#", line).split())


def _numbers(line: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(line)]
