"""Run a real `calmon serve` (uvicorn) in a subprocess for end-to-end tests.

    with running_server(database_url) as server:
        httpx.get(f"{server.base_url}/v1/models", headers=...)

    with calmon_process(["worker"], database_url) as (process, log_path):
        ...

The server gets a free loopback port, a clean environment (no inherited ``CALMON_*``
variables, so a developer's shell cannot change what a test sees) plus ``env``, and the context
manager returns only once ``/readyz`` answers 200. Its output goes to ``server.log_path``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.waiting import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]

_log_roots: list[Path] = []
"""Where processes started without a log location write their logs: under pytest, the
session's temporary directory (tests/conftest.py sets it; pytest keeps its last three runs'),
where a test can still read a log after its process stopped."""


def keep_logs_under(root: Path) -> None:
    """Write the logs of processes started without a log location under ``root`` from now on."""
    _log_roots[:] = [root]


@contextmanager
def _log_directory(prefix: str) -> Iterator[Path]:
    """A directory for one process's log: under the test session's root, or (a bench, a
    script) a temporary one removed when the process has stopped."""
    if _log_roots:
        yield Path(tempfile.mkdtemp(prefix=prefix, dir=_log_roots[0]))
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        yield Path(directory)


@dataclass(frozen=True)
class LiveServer:
    """A running calmon process."""

    base_url: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    def logs(self) -> str:
        """Everything the process wrote so far (JSON lines from calmon and uvicorn)."""
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def clean_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The current environment without ``CALMON_*`` settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CALMON_")}
    env.update(extra)
    return env


@contextmanager
def calmon_process(
    args: Sequence[str],
    database_url: str,
    *,
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """Run ``calmon <args>`` (e.g. ``["worker"]``) on ``database_url``; SIGTERM it afterwards.

    Yields the process and the file that receives its stdout and stderr (by default in a
    directory of :func:`_log_directory`'s).
    """
    settings_env = {"CALMON_DATABASE_URL": database_url, **(env or {})}
    with ExitStack() as stack:  # the log's directory, if it is ours, outlives the process
        if log_path is None:
            log_path = stack.enter_context(_log_directory("calmon-process-")) / "process.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "app.cli", *args],
                cwd=REPO_ROOT,
                env=clean_environment(settings_env),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            yield process, log_path
        finally:
            stop_process(process)


@contextmanager
def running_server(
    database_url: str,
    *,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    ready_timeout: float = 30.0,
    log_dir: Path | None = None,
) -> Iterator[LiveServer]:
    """Start `calmon serve` on ``database_url``, wait for /readyz, stop it (SIGTERM) afterwards.

    ``env`` adds or overrides settings (e.g. ``{"CALMON_AUTH_DISABLED": "true"}``); ``args``
    are extra command-line arguments after ``serve``. Raises RuntimeError with the server's log
    if it exits, AssertionError with it if it is not ready within ``ready_timeout`` seconds.
    """
    port = free_port()
    command = ["serve", "--host", "127.0.0.1", "--port", str(port), *args]
    with ExitStack() as stack:
        directory = log_dir or stack.enter_context(_log_directory("calmon-server-"))
        log_path = directory / f"server-{port}.log"
        process, _ = stack.enter_context(
            calmon_process(command, database_url, env=env, log_path=log_path)
        )
        server = LiveServer(f"http://127.0.0.1:{port}", port, process, log_path)
        _wait_until_ready(server, ready_timeout)
        yield server


def stop_process(process: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    """SIGTERM, then SIGKILL if the process does not exit within ``timeout``; the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def _wait_until_ready(server: LiveServer, timeout: float) -> None:
    last_status = "no answer"

    def ready(client: httpx.Client) -> bool:
        nonlocal last_status
        if server.process.poll() is not None:
            raise RuntimeError(
                f"calmon serve exited with {server.process.returncode}:\n{server.logs()}"
            )
        try:
            response = client.get(f"{server.base_url}/readyz")
        except httpx.TransportError as exc:
            last_status = type(exc).__name__
            return False
        last_status = f"{response.status_code} {response.text}"
        return response.status_code == 200

    with httpx.Client(timeout=2.0) as client:
        wait_for(
            lambda: ready(client),
            "calmon serve ready",
            timeout=timeout,
            poll=0.1,
            diagnostics=lambda: f"last answer: {last_status}\n{server.logs()}",
        )


def bearer_client(base_url: str, token: str, timeout: float = 300.0) -> httpx.Client:
    """An httpx client of a running server that sends the token with every request."""
    return httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
    )


def run_calmon(
    *args: str, cwd: Path = REPO_ROOT, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``calmon <args>`` run to its end in ``cwd``, with a clean environment plus ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=cwd,
        env=clean_environment({"PYTHONPATH": str(REPO_ROOT), **(env or {})}),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
