"""`calmon demo` leaves a model whose verdicts show the prior shift and whose degradation paged
on early labels, the degraded days still waiting for theirs (tests/support/demo.py's checks).

Its own SQLite service is run by the README's command, beside the Quick start's `calmon serve`
holding its port, in tests/integration/test_readme_replay.py; here, the deployment with a
running service and a worker of its own, and the options around the run."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from app import cli
from app.demo import command, local_service
from tests.support.databases import settings_for
from tests.support.demo import DEMO_ENV, check_printout, check_series, run_demo
from tests.support.server import (
    REPO_ROOT,
    calmon_process,
    clean_environment,
    free_port,
    running_server,
    stop_process,
)
from tests.support.waiting import wait_for


@pytest.mark.e2e
def test_demo_against_a_running_service_with_its_own_worker(
    backend: str, tmp_path: Path, make_token: Callable[..., str], database_url: str
) -> None:
    if backend != "postgresql":
        pytest.skip(
            "the demo's own SQLite service is run as the README says, in test_readme_replay.py;"
            " this is the PostgreSQL deployment"
        )
    token = make_token("admin", "ingest", "read")
    with (
        running_server(database_url, log_dir=tmp_path) as server,
        calmon_process(["worker"], database_url, env=DEMO_ENV),
    ):
        done = run_demo("--url", server.base_url, env={"CALMON_TOKEN": token})
        assert done.returncode == 0, done.stderr
        check_printout(done.stdout)
        check_series(server.base_url, token)


def test_demo_with_exit_stops_its_service_once_the_run_is_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--exit` returns when the run is over instead of serving until Ctrl-C, and stops the
    service it started on ``--data-dir``'s database. The run itself (the stream, the page, the
    printout) is the README's `calmon demo`, replayed in full in test_readme_replay.py; here it
    is replaced by a check that the service it was given answers with the demo's token."""
    seen: list[subprocess.Popen[bytes]] = []

    def run(
        args: argparse.Namespace,
        url: str,
        token: str,
        started: float,
        server: subprocess.Popen[bytes] | None,
    ) -> int:
        assert server is not None
        response = httpx.get(f"{url}/v1/models", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200, response.text
        seen.append(server)
        return 0

    monkeypatch.setattr(command, "_run", run)
    argv = ["demo", "--exit", "--port", str(free_port()), "--data-dir", str(tmp_path)]
    codes: list[int] = []
    # In a thread: a demo that kept serving would wait for Ctrl-C; it gets SIGTERM instead.
    demo = threading.Thread(target=lambda: codes.append(cli.run(argv, settings_for("sqlite://"))))
    demo.start()
    demo.join(60)
    [server] = seen
    if demo.is_alive():
        stop_process(server)
        demo.join()
        pytest.fail("--exit: the demo kept serving after its run")
    assert codes == [0]
    assert server.poll() is not None  # stopped
    assert (tmp_path / local_service.DEMO_DATABASE).is_file()


def test_demo_refuses_a_run_too_short_to_show_it() -> None:
    done = run_demo("--days", "40")
    assert done.returncode == 2
    assert "--days 40: at least 60" in done.stderr


def test_demo_refuses_a_port_asked_for_and_taken_naming_who_holds_it(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_demo("--port", str(port), "--data-dir", str(tmp_path))
    assert done.returncode == 1
    # This test's own process holds it.
    [line] = done.stderr.splitlines()
    assert line.startswith(f"calmon demo: port {port} is in use (pid {os.getpid()}: "), line
    assert line.endswith("): pass another --port"), line
    assert not (tmp_path / local_service.DEMO_DATABASE).exists()  # refused before anything


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_to_the_demo_stops_its_server(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "demo.log"
    with log.open("wb") as output:
        demo = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "demo", "--port", str(port), "--data-dir",
             str(tmp_path)],
            cwd=REPO_ROOT,
            env=clean_environment(DEMO_ENV),
            stdout=output,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    children: list[int] = []
    try:
        wait_for(
            lambda: "registered at" in log.read_text(),
            "the demo's model registered on its server",
            timeout=90,
            diagnostics=log.read_text,
        )
        children = _children(demo.pid)
        assert children, "the demo runs its calmon serve as a child"
        demo.send_signal(signal.SIGTERM)
        assert demo.wait(30) == 130, log.read_text()
        assert "calmon demo: stopped" in log.read_text()
        assert not [pid for pid in children if _alive(pid)], "its calmon serve still runs"
        assert not _answers(f"http://127.0.0.1:{port}")
    finally:
        stop_process(demo)
        for pid in children:  # left running by a demo that did not stop it: the test's to end
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
