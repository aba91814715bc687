"""Run the Debian ``prometheus`` binary on loopback with the project's own config and rules.

The end-to-end test must exercise the rules users deploy, not a copy: ``render_loopback_config``
reads config/prometheus/prometheus.yml and rules/*.yml and changes only what a test must change
(the scrape target, the intervals, the ``for:`` durations). ``PrometheusServer`` starts the binary
and reads its HTTP API.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import yaml

from tests.support.server import free_port
from tests.support.tools import REPO_ROOT
from tests.support.waiting import wait_for

PROMETHEUS_DIR = REPO_ROOT / "config" / "prometheus"


def render_loopback_config(
    directory: Path,
    *,
    target: str,
    interval_seconds: int,
    for_duration: str,
    scrape_token: str | None = None,
) -> Path:
    """Write a loopback variant of the project's Prometheus config into ``directory``.

    Parameters
    ----------
    directory:
        Output directory; receives ``prometheus.yml`` and ``rules/``.
    target:
        ``host:port`` of the calmon API to scrape.
    interval_seconds:
        Scrape and rule evaluation interval.
    for_duration:
        Replaces every rule's ``for:`` so alerts become active within the test's time budget.
    scrape_token:
        The API's CALMON_METRICS_TOKEN: written to the file the config's ``authorization``
        reads (the compose secret's place in production); None drops the authorization.

    Returns
    -------
    Path of the rendered ``prometheus.yml``.
    """
    config = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    config["global"]["scrape_interval"] = f"{interval_seconds}s"
    config["global"]["evaluation_interval"] = f"{interval_seconds}s"
    config.pop("alerting", None)  # no Alertmanager in the test; alerts are read from /api/v1/alerts
    (job,) = (job for job in config["scrape_configs"] if job["job_name"] == "calmon")
    job["static_configs"] = [{"targets": [target]}]
    if scrape_token is None:
        job.pop("authorization", None)
    else:
        token_file = directory / "metrics_token"
        directory.mkdir(parents=True, exist_ok=True)
        token_file.write_text(scrape_token)
        job["authorization"]["credentials_file"] = str(token_file)
    config["scrape_configs"] = [job]

    rules_dir = directory / "rules"
    rules_dir.mkdir(parents=True, exist_ok=True)
    for source in sorted((PROMETHEUS_DIR / "rules").glob("*.yml")):
        rules = yaml.safe_load(source.read_text())
        for group in rules["groups"]:
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = for_duration
        (rules_dir / source.name).write_text(yaml.safe_dump(rules, sort_keys=False))
    path = directory / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class PrometheusServer:
    """A running ``prometheus`` on 127.0.0.1 and a small client for its HTTP API."""

    def __init__(self, base_url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
        self.base_url = base_url
        self.process = process
        self.log_path = log_path

    def api(self, path: str, **params: str) -> Any:
        """GET ``/api/v1/<path>`` and return its ``data`` member."""
        query = urllib.parse.urlencode(params)
        url = f"{self.base_url}/api/v1/{path}" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Evaluate an instant PromQL query; returns the result vector."""
        return cast(list[dict[str, Any]], self.api("query", query=expr)["result"])

    def alerts(self) -> list[dict[str, Any]]:
        """Active (pending or firing) alerts."""
        return cast(list[dict[str, Any]], self.api("alerts")["alerts"])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def run_prometheus(
    directory: Path,
    *,
    target: str,
    interval_seconds: int = 1,
    for_duration: str = "2s",
    scrape_token: str | None = None,
) -> Iterator[PrometheusServer]:
    """Start Prometheus with the rendered loopback config; stop it on exit."""
    binary = shutil.which("prometheus")
    assert binary is not None, "prometheus is not installed"
    config = render_loopback_config(
        directory,
        target=target,
        interval_seconds=interval_seconds,
        for_duration=for_duration,
        scrape_token=scrape_token,
    )
    port = free_port()
    log_path = directory / "prometheus.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--web.enable-lifecycle",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = PrometheusServer(f"http://127.0.0.1:{port}", process, log_path)
    try:
        _wait_ready(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(server: PrometheusServer, timeout: float = 20) -> None:
    def ready() -> bool:
        if server.process.poll() is not None:
            raise RuntimeError(f"prometheus exited early:\n{server.log()}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/-/ready", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    wait_for(ready, "prometheus ready", timeout=timeout, diagnostics=server.log)
