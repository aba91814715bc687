"""The `calmon` command as a client of a real `calmon serve` (SQLite, its embedded worker):
status, alerts, metrics, a label feed, the analyses over HTTP, a countdown while a dead URL
is retried, and no library log lines on stderr."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from app.client import CalmonClient
from tests.support.server import (
    REPO_ROOT,
    LiveServer,
    clean_environment,
    free_port,
    run_calmon,
    running_server,
)
from tests.support.waiting import wait_for

DAYS = 4
ROWS_PER_DAY = 400
FIRST_DAY = datetime(2026, 1, 5, tzinfo=UTC)


calmon = run_calmon


class Service:
    """A running service with two models of the same days, computed, and an admin token."""

    def __init__(self, server: LiveServer, database_url: str, token: str) -> None:
        self.server = server
        self.database_url = database_url
        self.token = token

    def env(self) -> dict[str, str]:
        """What a user exports: the service and the token."""
        return {"CALMON_URL": self.server.base_url, "CALMON_TOKEN": self.token}


def _send_days(client: CalmonClient, model: str, separation: float) -> None:
    rng = np.random.default_rng(3)
    n = DAYS * ROWS_PER_DAY
    labels = (rng.random(n) < 0.05).astype(int)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + separation * labels - 2)))
    offsets = np.arange(n) * (DAYS * 86_400 // n)
    timestamps = [(FIRST_DAY + timedelta(seconds=int(s))).isoformat() for s in offsets]
    client.create_model(model, 0.5, granularity="day", timezone="UTC")
    client.send(
        model,
        ids=[f"tx-{i}" for i in range(n)],
        timestamps=timestamps,
        scores=scores,
        labels=labels,
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    directory = tmp_path_factory.mktemp("cli-client")
    database_url = f"sqlite:///{directory / 'calmon.sqlite3'}"
    with running_server(database_url, log_dir=directory) as server:
        minted = calmon(
            "token",
            "create",
            "--name",
            "cli",
            "--scopes",
            "admin,ingest,read",
            env={"CALMON_DATABASE_URL": database_url},
        )
        assert minted.returncode == 0, minted.stderr
        token = minted.stdout.strip()
        with CalmonClient(server.base_url, token) as client:
            _send_days(client, "cards", separation=3.0)
            _send_days(client, "cards-v2", separation=2.0)

            def computed() -> bool:
                return all(
                    client.status(m)["windows"] == DAYS and client.status(m)["dirty_windows"] == 0
                    for m in ("cards", "cards-v2")
                )

            wait_for(computed, "the embedded worker's windows", timeout=90, poll=0.3)
        yield Service(server, database_url, token)


def test_status_shows_readiness_and_each_models_windows(service: Service) -> None:
    done = calmon("status", env=service.env())
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{service.server.base_url}: up, ready"
    assert lines[1].split()[:3] == ["model", "windows", "newest"]
    cards = next(line.split() for line in lines if line.startswith("cards "))
    assert cards[:5] == ["cards", str(DAYS), "2026-01-08", "0", "0"]
    assert cards[-2:] == ["1", "running"]  # the embedded worker
    as_json = json.loads(calmon("status", "--json", env=service.env()).stdout)
    assert as_json["ready"] is True
    assert sorted(m["model"] for m in as_json["models"]) == ["cards", "cards-v2"]


def test_status_without_a_token_says_how_to_see_the_models(service: Service) -> None:
    done = calmon("status", "--url", service.server.base_url)
    assert done.returncode == 0, done.stderr
    assert "pass --token or set CALMON_TOKEN (read scope)" in done.stdout


def test_alerts_of_one_model_and_of_all(service: Service) -> None:
    one = calmon("alerts", "cards", env=service.env())
    assert one.returncode == 0, one.stderr
    header, row, *reasons = one.stdout.splitlines()
    assert header.split()[:3] == ["model", "segment", "state"]
    assert row.split()[:3] == ["cards", "all", "warming_up"]
    assert reasons[0].startswith("cards all: collecting the reference: 4 of 14 usable windows")
    every = calmon("alerts", "--json", env=service.env())
    assert [a["model"] for a in json.loads(every.stdout)] == ["cards", "cards-v2"]


def test_metrics_as_a_table_and_as_json(service: Service) -> None:
    done = calmon(
        "metrics", "cards", "--metric", "average_precision", "--from", "2026-01-06T00:00:00Z",
        env=service.env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == [
        "window_start", "n", "positives", "pi", "regular", "calibrated", "verdict"
    ]  # fmt: skip
    assert [row.split()[0] for row in rows] == ["2026-01-06", "2026-01-07", "2026-01-08"]
    assert all(row.split()[1] == str(ROWS_PER_DAY) for row in rows)
    points = json.loads(
        calmon(
            "metrics", "cards", "--metric", "average_precision", "--json", env=service.env()
        ).stdout
    )
    with CalmonClient(service.server.base_url, service.token) as client:
        assert points == client.metrics("cards", "average_precision")


def test_whatif_and_compare_ask_the_service_a_url_names(service: Service, tmp_path: Path) -> None:
    """Run where no database is (as after the demo's `export CALMON_URL`): the answers come
    from the service, not from a local SQLite file."""
    env = service.env()
    whatif = calmon(
        "whatif", "cards", "--pi", "0.01", "--range", "0.01", "0.1", "--no-intervals",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert whatif.returncode == 0, whatif.stderr
    answer = json.loads(whatif.stdout)
    assert answer["model"] == "cards"
    with CalmonClient(service.server.base_url, service.token) as client:
        request = {"priors": [0.01], "range": {"pi_lo": 0.01, "pi_hi": 0.1}, "intervals": False}
        assert answer == client.what_if("cards", request)
    compare = calmon("compare", "cards", "cards-v2", "--replicates", "200", env=env, cwd=tmp_path)
    assert compare.returncode == 0, compare.stderr
    assert "average precision" in compare.stdout
    assert not (tmp_path / "var").exists()  # no local database opened or created


def test_send_labels_sets_the_labels_of_a_label_feed(service: Service, tmp_path: Path) -> None:
    labels = tmp_path / "chargebacks.csv"
    labels.write_text("id,label,source\ntx-1,1,chargeback\ntx-2,1,chargeback\nnope,1,\n")
    done = calmon("send", "--labels", str(labels), "--model", "cards", env=service.env())
    assert done.returncode == 0, done.stderr
    assert "3 labels: 2 changed, 0 already as sent, 1 ids the model does not have" in done.stderr
    predictions = tmp_path / "predictions.csv"
    predictions.write_text("id,timestamp,score\ntx-1,2026-01-05T00:00:00Z,0.5\n")
    refused = calmon("send", "--labels", str(predictions), "--model", "cards", env=service.env())
    assert refused.returncode == 1
    assert "--labels, but it has a timestamp or score column" in refused.stderr


@pytest.mark.parametrize(
    "command",
    [["status"], ["alerts", "cards"], ["send", "feed.csv", "--model", "cards"]],
    ids=["status", "alerts", "send"],
)
def test_a_dead_url_counts_down_each_retry(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "feed.csv").write_text("id,timestamp,score\na,2026-01-05T00:00:00Z,0.5\n")
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    done = calmon(*command, "--url", url, "--token", "t", "--retries", "2", cwd=tmp_path)
    assert done.returncode == 1
    said = done.stderr.splitlines()
    refused = f"calmon: cannot reach {url} ([Errno 111] Connection refused)"
    assert said[0] == f"{refused}; retry 1 of 2 in 0.5 s", done.stderr
    assert said[1] == f"{refused}; retry 2 of 2 in 1.0 s", done.stderr
    assert said[-1].startswith(f"calmon: cannot reach {url}"), done.stderr
    assert "Traceback" not in done.stderr


def test_commands_that_open_the_database_print_no_alembic_lines(tmp_path: Path) -> None:
    env = {"CALMON_DATABASE_URL": f"sqlite:///{tmp_path / 'calmon.sqlite3'}"}
    migrated = calmon("migrate", env=env)
    assert migrated.returncode == 0, migrated.stderr
    listed = calmon("token", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    for done in (migrated, listed):
        loggers = [json.loads(line)["logger"] for line in done.stderr.splitlines()]
        assert not [name for name in loggers if name.startswith("alembic")], done.stderr
    assert [json.loads(line)["event"] for line in migrated.stderr.splitlines()] == [
        "migrating", "migrated"
    ]  # fmt: skip


def test_on_a_terminal_the_countdown_ticks_in_place(tmp_path: Path) -> None:
    """stderr on a real pseudo-terminal: one line rewritten each second ("in 2 s", "in 1 s"),
    then the attempt."""
    url = f"http://127.0.0.1:{free_port()}"
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "status", "--url", url, "--retries", "2"],
        cwd=REPO_ROOT,
        env=clean_environment({"PYTHONPATH": str(REPO_ROOT)}),
        stdout=subprocess.DEVNULL,
        stderr=terminal,
    )
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed: the command is done
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert process.wait(30) == 1
    text = shown.decode()
    said = f"calmon: cannot reach {url} ([Errno 111] Connection refused); retry 2 of 2 in"
    assert f"\r{said} 1 s " in text, text
    assert f"\r{said} 0 s, retrying" in text, text
    assert text.rstrip().splitlines()[-1].startswith(f"calmon: cannot reach {url}"), text
