"""The demo's own `calmon serve`: on a port that is free (8000, or the next one the system
gives when 8000 is taken: `calmon serve` of the Quick start may hold it), answering with the
token only its fresh database holds (so the demo never talks to a server it did not start),
and stopped with the demo, whichever way the demo stops (Ctrl-C, SIGTERM, the end of a run).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import httpx

from app.settings import Settings

DEMO_DATABASE = "calmon-demo.sqlite3"
SERVER_LOG = "calmon-demo-server.log"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def port_is_free(port: int) -> bool:
    """Whether the demo's server could bind 127.0.0.1:``port`` now (with SO_REUSEADDR, as
    uvicorn binds: a port left in TIME_WAIT by an earlier run counts as free)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def listener(port: int) -> str:
    """Who listens on ``port``: " (pid N: its command line)" when this user may see it (from
    /proc on Linux), else ""."""
    try:
        inodes = {
            fields[9]
            for table in ("/proc/net/tcp", "/proc/net/tcp6")
            for fields in (line.split() for line in Path(table).read_text().splitlines()[1:])
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A"  # LISTEN
        }
    except OSError:
        return ""
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        try:
            links = {os.readlink(fd) for fd in (process / "fd").iterdir()}
            if links & {f"socket:[{inode}]" for inode in inodes}:
                command = (process / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                return f" (pid {process.name}: {command.strip()[:120]})"
        except OSError:
            continue  # gone, or another user's
    return ""


def demo_port(wanted: int, explicit: bool) -> int:
    """``wanted`` if free; else, when it was only the default, a free port the system gives;
    a port asked for with --port is refused in one line naming who holds it."""
    if port_is_free(wanted):
        return wanted
    holder = listener(wanted)
    if explicit:
        raise RuntimeError(f"port {wanted} is in use{holder}: pass another --port")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    _say(f"port {wanted} is in use{holder}: the demo serves on port {port} instead")
    return port


def _fresh_database(data_dir: Path) -> tuple[str, str]:
    """A new demo database (migrated) and an admin token in it: its URL and the token."""
    # Imported here: the database layer is needed only when the demo runs its own service.
    from app.db.engine import create_db_engine, create_session_factory  # noqa: PLC0415
    from app.db.migrate import upgrade  # noqa: PLC0415
    from app.services.tokens import create_token  # noqa: PLC0415

    data_dir.mkdir(parents=True, exist_ok=True)
    database = data_dir / DEMO_DATABASE
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    url = f"sqlite:///{database.as_posix()}"
    _say(f"demo database: {database} (recreated on every run)")
    upgrade(url)
    engine = create_db_engine(Settings(database_url=url))
    try:
        with create_session_factory(engine).begin() as session:
            token = create_token(session, "demo", ["admin", "ingest", "read"]).token
    finally:
        engine.dispose()
    return url, token


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the demo as Ctrl-C does: its server with it


@contextmanager
def local_service(data_dir: Path, port: int) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """A fresh demo database, an admin token in it, and `calmon serve` on it at ``port``;
    yields its URL, the token and the process, and stops the process on the way out."""
    database_url, token = _fresh_database(data_dir)
    # The caller's other settings (CALMON_BOOTSTRAP_REPLICATES...) apply; the database and
    # its embedded worker are the demo's.
    env = {**os.environ, "CALMON_DATABASE_URL": database_url, "CALMON_WORKER_EMBEDDED": "true"}
    env.setdefault("CALMON_LOG_LEVEL", "warning")
    log_path = data_dir / SERVER_LOG
    # Only the main thread may set a handler (a test runs the command in another one).
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main else None
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base_url, token, server, log_path)
        yield base_url, token, server
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
        if main:
            signal.signal(signal.SIGTERM, previous)


def _wait_ready(url: str, token: str, server: subprocess.Popen[bytes], log: Path) -> None:
    """Until the child is ready and is the one answering: only its database knows ``token``
    (another server on the port answers 401), and the child must still be running."""
    deadline = time.monotonic() + 60
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(
                f"its calmon serve exited ({server.returncode}; port in use? try --port); see {log}"
            )
        try:
            ready = httpx.get(f"{url}/readyz", timeout=2).status_code == 200
            if ready and httpx.get(f"{url}/v1/models", headers=headers, timeout=2).is_success:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"calmon serve did not become ready; see {log}")
