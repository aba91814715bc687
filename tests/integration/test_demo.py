"""`calmon demo` leaves a model whose verdicts show the prior shift and whose degradation paged
on early labels, the degraded days still waiting for theirs (tests/support/demo.py's checks).

Its own SQLite service is run by the README's command, in tests/integration/test_readme_replay.py;
here, the deployment with a running service and a worker of its own, and the options around
the run."""

from __future__ import annotations

import argparse
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from app import cli
from app.demo import command, local_service
from tests.support.databases import settings_for
from tests.support.demo import DEMO_ENV, check_printout, check_series, run_demo
from tests.support.server import calmon_process, free_port, running_server, stop_process


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


def test_demo_says_when_its_port_is_taken(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_demo("--port", str(port), "--data-dir", str(tmp_path))
    assert done.returncode == 1
    assert "port in use? try --port" in done.stderr
    assert "Traceback" not in done.stderr
