"""The containers' healthcheck commands, run against a real `calmon serve`.

No Docker engine here, so the commands themselves are taken from the Dockerfile and
docker-compose.yml and executed as the container would run them (the port is the test server's).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.support.server import LiveServer, free_port
from tests.support.tools import REPO_ROOT


def dockerfile_healthcheck() -> list[str]:
    text = (REPO_ROOT / "Dockerfile").read_text()
    (command,) = re.findall(r"^HEALTHCHECK .*?CMD (\[.*?\])$", text, re.MULTILINE | re.DOTALL)
    return list(json.loads(command))


def compose_api_healthcheck() -> list[str]:
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    test = compose["services"]["api"]["healthcheck"]["test"]
    assert test[0] == "CMD"
    return list(test[1:])


def run_check(command: list[str], port: int) -> int:
    assert command[0] == "python"
    argv = [sys.executable, *command[1:]]
    # The compose check names the container's port; point it at the test server's instead.
    argv = [arg.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for arg in argv]
    env = {**os.environ, "CALMON_PORT": str(port)}
    return subprocess.run(argv, env=env, capture_output=True, timeout=30, check=False).returncode


# The probes do not depend on the database backend: one server start is enough.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_healthchecks_pass_on_a_serving_api(live_server: LiveServer) -> None:
    assert run_check(dockerfile_healthcheck(), live_server.port) == 0
    assert run_check(compose_api_healthcheck(), live_server.port) == 0


def test_healthchecks_fail_when_nothing_listens() -> None:
    port = free_port()
    assert run_check(dockerfile_healthcheck(), port) != 0
    assert run_check(compose_api_healthcheck(), port) != 0
