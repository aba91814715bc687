"""Run real `calmon worker` processes for end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.server import REPO_ROOT, clean_environment, stop_process


@dataclass(frozen=True)
class WorkerProcess:
    """A running `calmon worker`."""

    process: subprocess.Popen[bytes]
    log_path: Path

    def logs(self) -> str:
        """Everything the process wrote so far."""
        return self.log_path.read_text(errors="replace")


def start_worker(
    database_url: str, log_dir: Path, name: str, env: Mapping[str, str] | None = None
) -> WorkerProcess:
    """Start `calmon worker` on ``database_url`` (clean environment plus ``env``)."""
    log_path = log_dir / f"worker-{name}.log"
    settings_env = {"CALMON_DATABASE_URL": database_url, **(env or {})}
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker"],
            cwd=REPO_ROOT,
            env=clean_environment(settings_env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return WorkerProcess(process, log_path)


@contextmanager
def running_workers(
    database_url: str, log_dir: Path, count: int, env: Mapping[str, str] | None = None
) -> Iterator[list[WorkerProcess]]:
    """``count`` workers for the duration of the block, stopped with SIGTERM afterwards."""
    workers = [start_worker(database_url, log_dir, str(i), env) for i in range(count)]
    try:
        yield workers
    finally:
        for worker in workers:
            stop_process(worker.process)
