"""A scratch PostgreSQL cluster of a bench's own (never the shared one): initdb in a temporary
directory, started on a free port with the settings asked for, removed afterwards.

As root the server binaries run as the ``postgres`` user (initdb refuses root).
``compose_settings()`` reads the ``-c`` settings docker-compose.yml gives its postgres service,
so a bench can measure the server as the production path configures it.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import yaml
from sqlalchemy import create_engine, text

from tests.support.server import free_port

COMPOSE_FILE = Path(__file__).resolve().parent.parent / "docker-compose.yml"


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@dataclass
class Cluster:
    """A scratch PostgreSQL cluster: its URL, and how to restart it."""

    url: str
    data: str
    log: str

    def pg_ctl(self, *args: str) -> None:
        binary = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1]
        command = _as_postgres([binary, "-D", self.data, "-l", self.log, "-w", *args])
        subprocess.run(command, check=True, capture_output=True)


def compose_settings() -> dict[str, str]:
    """The ``-c name=value`` pairs of docker-compose.yml's postgres command."""
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    command: list[str] = services["postgres"].get("command", [])
    pairs = [value for flag, value in pairwise(command) if flag == "-c"]
    return dict(pair.split("=", 1) for pair in pairs)


@contextmanager
def scratch_cluster(settings: Mapping[str, str] | None = None) -> Iterator[Cluster]:
    """initdb, start on a free port with ``settings``, create a database ``calmon``; stop and
    delete it afterwards."""
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not binaries:
        raise SystemExit("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) are missing")
    directory = tempfile.mkdtemp(prefix="calmon-cluster-")
    data, log = f"{directory}/data", f"{directory}/postgres.log"
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres")
    subprocess.run(
        _as_postgres([f"{binaries[-1]}/initdb", "-D", data, "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
    )
    port = free_port()
    cluster = Cluster(f"postgresql+psycopg://postgres@127.0.0.1:{port}/calmon", data, log)
    options = [f"-p {port}", f"-k {directory}", "-c listen_addresses=127.0.0.1"]
    options += [f"-c {name}={value}" for name, value in (settings or {}).items()]
    cluster.pg_ctl("-o", " ".join(options), "start")
    try:
        admin = create_engine(
            f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
            isolation_level="AUTOCOMMIT",
        )
        with admin.connect() as connection:
            connection.execute(text("CREATE DATABASE calmon"))
        admin.dispose()
        yield cluster
    finally:
        try:
            cluster.pg_ctl("-m", "immediate", "stop")
        finally:
            shutil.rmtree(directory, ignore_errors=True)
