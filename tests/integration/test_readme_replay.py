"""The README and the docs site replayed: the shell blocks of the README's quick start, first
steps with curl and Python, and of the docs pages they lead to (late labels, a metric over time,
the alert budget, money, the PostgreSQL section), run as written against the real server they
start or talk to, and the answers are what the pages show. A section is found by its heading on
whichever page holds it (README.md or docs/*.md), so the replay follows an example that moves.

`.venv` in the blocks is the virtual environment running these tests, linked into the block's
working directory: `.ci/run` created it and installed this checkout into it, with the README's
own commands (checked below) plus the dev extras. Installing again from a test would download
every dependency for nothing. The only other rewrites are addresses: the server listens on a
free port (``CALMON_PORT``) instead of 8000, which a developer's own service may hold, and the
PostgreSQL section works in a database of its own, created and dropped by the test, as the
test's role: a test never creates or changes roles, so the `createuser` line is checked, not run.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
from collections.abc import Mapping
from importlib.metadata import distributions, version
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.databases import postgres_base_url
from tests.support.demo import DEMO_ENV, check_printout, check_series
from tests.support.replay import (
    assert_printed,
    background_script,
    blocks,
    json_documents,
    link_venv,
    needs_curl,
    readme_json,
    replaced,
    run_blocks,
    section,
    wait_ready,
)
from tests.support.server import REPO_ROOT, clean_environment, free_port, running_server
from tests.support.waiting import wait_for

QUICK_START = "Quick start (embedded SQLite, one command)"
DEMO = "See it work: `calmon demo`"
FIRST_STEPS = "First steps with curl"
WHERE_TO_LOOK = "Where to look"
FROM_PYTHON = "From Python"
LATE_LABELS = "Late labels"
RESPONSES = "Responses and errors"
SERIES = "A metric over time"
POSTGRESQL = "PostgreSQL"


def first_steps(base_url: str, workdir: Path, env: Mapping[str, str] | None = None) -> None:
    """`## First steps with curl`, the label update of `### Late labels`, then the metric query
    of `### A metric over time` until the window is computed; every answer as the README shows
    it."""
    [look] = blocks(WHERE_TO_LOOK, "bash")
    steps = [*blocks(FIRST_STEPS, "bash"), look, from_python(), blocks(LATE_LABELS, "bash")[0]]
    _tokens, model, batch, looked, python, labels = run_blocks(steps, base_url, workdir, env)
    assert json.loads(model)["timezone"] == "Europe/Paris"
    assert json.loads(batch) == readme_json(RESPONSES)
    alerts, status = json_documents(looked)
    assert alerts["model"] == status["model"] == "card-fraud", (alerts, status)
    assert f"`{alerts['state']}`" in section(WHERE_TO_LOOK)
    assert python.splitlines() == blocks(FROM_PYTHON, "text")[0].strip().splitlines()
    assert json.loads(labels) == readme_json(LATE_LABELS)

    def computed_series() -> dict[str, Any] | None:
        [series] = run_blocks(blocks(SERIES, "bash"), base_url, workdir, env)
        answer: dict[str, Any] = json.loads(series)
        return answer if answer["points"] else None

    answer = wait_for(computed_series, "a worker to compute the window", timeout=90, poll=0.5)
    shown = readme_json(SERIES)
    assert [p["window_start"] for p in answer["points"]] == [
        p["window_start"] for p in shown["points"]
    ]
    assert set(shown) <= set(answer)
    assert set(shown["points"][0]) <= set(answer["points"][0])
    alert_budget(base_url, workdir, env)
    money(base_url, workdir, env)
    more_examples(base_url, workdir, env)


MORE_EXAMPLES = (
    "A model's segments",
    "One window in detail",
    "pi0 and the worker's queue",
    "4. The alert state",
    "Which metric to trust",
    "Before the labels arrive",
)
"""Sections of the docs pages whose curl examples run on the first steps' model as written
(each answer a JSON document, none an error). The examples that need a longer history (what-if,
champion vs challenger, segments side by side, the metric catalogue's table, the reference
re-anchoring, the early estimates) run on the streams the pages describe, in
tests/integration/test_docs_worlds_replay.py."""


def more_examples(base_url: str, workdir: Path, env: Mapping[str, str] | None = None) -> None:
    """The curl blocks of MORE_EXAMPLES and the chargeback CSV of `Late labels` (the same
    labels again: nothing changes), with the first steps' tokens and a read token."""
    tokens = blocks(FIRST_STEPS, "bash")[0]
    read = ".venv/bin/calmon token create --name replay-read --scopes read"
    examples = [
        block
        for heading in MORE_EXAMPLES
        for block in blocks(heading, "bash")
        if block.startswith("curl ")
    ]
    assert len(examples) >= len(MORE_EXAMPLES)
    _tokens, *answers, chargebacks = run_blocks(
        [f"{tokens}READ=$({read})", *examples, blocks(LATE_LABELS, "bash")[1]],
        base_url,
        workdir,
        env,
    )
    for example, answer in zip(examples, answers, strict=True):
        documents = json_documents(answer)
        assert documents, example
        for document in documents:
            assert "error" not in document, (example, document)
    assert json.loads(chargebacks)["unknown_ids"] == ["tx-404"]
    assert json.loads(chargebacks)["rows_updated"] == 0


def from_python() -> str:
    """The README's Python block as a bash step: run by the venv's Python with the ingest
    token of the first steps in ``CALMON_TOKEN``, as the README says."""
    [script] = blocks(FROM_PYTHON, "python")
    return f"CALMON_TOKEN=\"$INGEST\" .venv/bin/python - <<'PYTHON'\n{script}PYTHON"


ALERT_BUDGET = "The alert budget: precision at k"
MONEY = "Money: value caught and net savings"


def alert_budget(base_url: str, workdir: Path, env: Mapping[str, str] | None = None) -> None:
    """`### The alert budget: precision at k` after the first steps: the budget set, then the
    precision-at-k series once the worker recomputed the window, as the README shows it."""
    changed_then_series(ALERT_BUDGET, base_url, workdir, env)


def money(base_url: str, workdir: Path, env: Mapping[str, str] | None = None) -> None:
    """`### Money: value caught and net savings` after the alert budget: the review cost set and
    the rows sent again with amounts, then the net-savings series once the worker recomputed the
    window, as the README shows it."""
    changed_then_series(MONEY, base_url, workdir, env)


def changed_then_series(
    heading: str, base_url: str, workdir: Path, env: Mapping[str, str] | None
) -> None:
    """A section of two blocks, a change then a series query: run the change as the reader of
    the first steps would ($ADMIN and $INGEST), then the query until the worker has recomputed
    the window (a defined value), and compare with the section's JSON."""
    tokens = blocks(FIRST_STEPS, "bash")[0]
    change, query = blocks(heading, "bash")
    admin = run_blocks([tokens, change, 'echo "$ADMIN"'], base_url, workdir, env)[-1]
    shown = readme_json(heading)

    def recomputed() -> dict[str, Any] | None:
        script = f"ADMIN={admin}\n{query}"
        answer: dict[str, Any] = json.loads(run_blocks([script], base_url, workdir, env)[0])
        points = answer["points"]
        return answer if points and points[0]["regular"] is not None else None

    answer = wait_for(recomputed, f"the window recomputed after {heading}", timeout=90, poll=0.5)
    assert set(shown) <= set(answer)
    for key in ("model", "metric", "segment"):
        assert answer[key] == shown[key]
    [point] = answer["points"]
    for key, value in shown["points"][0].items():
        assert point[key] == value, (key, point)


@pytest.mark.e2e
@needs_curl
def test_quick_start_then_first_steps_answer_what_the_readme_shows(tmp_path: Path) -> None:
    block, tests = blocks(QUICK_START, "bash")
    make_venv, install, serve = (command.strip() for command in block.strip().split(" && "))
    # The second command up front runs the tests: the CI entry point, this suite among them.
    assert tests.strip() == "bash .ci/run"
    # The install as .ci/run (which runs this suite) did it: the same venv, this checkout
    # installed editable, with the dev extras on top of the README's `-e .`.
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    assert make_venv == "python3 -m venv .venv"
    assert f"\n{make_venv}\n" in ci
    assert install == ".venv/bin/pip install -e ."
    assert "\n.venv/bin/pip install --quiet -e '.[dev]'\n" in ci
    # (The checkout's own calmon.egg-info is a distribution too, without an install record.)
    installs = [
        json.loads(d.read_text("direct_url.json") or "{}") for d in distributions(name="calmon")
    ]
    assert {"dir_info": {"editable": True}, "url": REPO_ROOT.as_uri()} in installs, installs
    link_venv(tmp_path)

    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with background_script(serve, tmp_path, {"CALMON_PORT": str(port)}, log) as process:
        wait_ready(base_url, process, log, timeout=60)
        # "creates ./var/calmon.sqlite3 (relative to the directory it starts in)"
        assert (tmp_path / "var" / "calmon.sqlite3").is_file()
        assert httpx.get(f"{base_url}/healthz").status_code == 200
        home = httpx.get(f"{base_url}/")
        assert home.is_redirect
        assert home.headers["location"].endswith("/ui/")
        assert httpx.get(f"{base_url}/ui/").status_code == 200
        docs = httpx.get(f"{base_url}/docs")
        assert docs.status_code == 200
        assert "text/html" in docs.headers["content-type"]
        assert "openapi" in httpx.get(f"{base_url}/openapi.json").json()
        shown = subprocess.run(
            [".venv/bin/calmon", "--version"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        assert version("calmon") in shown.stdout
        # "They refuse to create a database that does not exist"
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        refused = subprocess.run(
            [str(tmp_path / ".venv/bin/calmon"), "token", "create", "--name", "x"],
            cwd=elsewhere,
            env=clean_environment({}),
            capture_output=True,
            text=True,
            check=False,
        )
        assert refused.returncode != 0
        assert not (elsewhere / "var" / "calmon.sqlite3").exists()

        # The first steps, run where `calmon serve` runs (as the README says).
        first_steps(base_url, tmp_path)


@pytest.mark.e2e
def test_quick_start_demo_beside_the_serve_pages_early_then_serves(tmp_path: Path) -> None:
    """The Quick start in order: `calmon serve` still running on its port (8000, here
    CALMON_PORT) in the same directory, then the demo's command. The demo serves on another
    port, talks to its own server only, prints what the README shows and serves it."""
    [command] = blocks(DEMO, "bash")
    assert command.strip() == ".venv/bin/calmon demo"
    link_venv(tmp_path)
    port = free_port()
    # Fewer bootstrap replicates and a quicker idle worker (tests/support/demo.py): no verdict
    # or page uses the replicates, and the worker gets through the windows sooner.
    env = {"CALMON_PORT": str(port), **DEMO_ENV}
    serve_log, log = tmp_path / "serve.log", tmp_path / "demo.log"
    with background_script(".venv/bin/calmon serve", tmp_path, env, serve_log) as serve:
        wait_ready(f"http://127.0.0.1:{port}", serve, serve_log, timeout=60)
        token, demo_port = _demo_beside(command, tmp_path, env, log)
        assert serve.poll() is None
        assert demo_port != port
    # Its service stopped; its database still holds what it showed.
    database_url = f"sqlite:///{tmp_path / 'var' / 'calmon-demo.sqlite3'}"
    with running_server(database_url, log_dir=tmp_path) as server:
        check_series(server.base_url, token)


def _demo_beside(command: str, tmp_path: Path, env: dict[str, str], log: Path) -> tuple[str, int]:
    """Run the demo's command while the Quick start's server holds CALMON_PORT; check what it
    prints and serves, stop it with Ctrl-C; its token and port."""
    port = env["CALMON_PORT"]
    with background_script(command, tmp_path, env, log) as process:

        def serving() -> bool:
            assert process.poll() is None, log.read_text()
            return "serving until Ctrl-C" in log.read_text()

        wait_for(serving, "the demo serving", timeout=300, poll=0.5, diagnostics=log.read_text)
        shown = log.read_text()
        moved = re.search(
            rf"port {port} is in use \(pid \d+: [^)]* serve\): the demo serves on port (\d+)",
            shown,
        )
        assert moved is not None, shown
        demo_port = int(moved[1])
        # "on var/calmon-demo.sqlite3 (recreated on each run)"
        assert (tmp_path / "var" / "calmon-demo.sqlite3").is_file()
        # The README's run: the same seed, so the same stream and the same answers.
        for block in blocks(DEMO, "text"):
            assert_printed(block, shown)
        check_printout(shown)
        token = re.search(r"export CALMON_TOKEN=(\S+)", shown)
        assert token is not None, shown
        # It serves what it printed, until Ctrl-C; the Quick start's server has no such model.
        headers = {"Authorization": f"Bearer {token[1]}"}
        alerts = httpx.get(
            f"http://127.0.0.1:{demo_port}/v1/models/demo-card-fraud/alerts", headers=headers
        )
        assert alerts.status_code == 200
        assert alerts.json()["state"] == "drop"
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole group
        assert process.wait(30) == 0, log.read_text()
    return token[1], demo_port


@pytest.mark.e2e
@pytest.mark.postgres
@needs_curl
@pytest.mark.skipif(shutil.which("createdb") is None, reason="the section uses createdb")
def test_postgresql_section_with_its_worker_computes_the_windows(tmp_path: Path) -> None:
    base = postgres_base_url()  # skips (or fails under CI=true) like every PostgreSQL test
    link_venv(tmp_path)
    [block] = blocks(POSTGRESQL, "bash")
    create_role, script = block.split("\n", 1)
    # Creating a role changes the cluster for everyone; the test checks the line and runs
    # the rest as its own role, in a database of its own.
    assert create_role.split("#")[0].split() == [
        "createuser", "-h", "127.0.0.1", "-U", "postgres", "-P", "calmon"
    ]  # fmt: skip
    database = f"calmon_readme_{os.getpid()}_{secrets.token_hex(3)}"
    host, pg_port, user = base.host or "127.0.0.1", str(base.port or 5432), base.username or ""
    login = f"{user}:{base.password}" if base.password else user
    url = f"postgresql+psycopg://{login}@{host}:{pg_port}/{database}"
    script = replaced(
        script,
        {
            "createdb -h 127.0.0.1 -U postgres -O calmon calmon": (
                f"createdb -h {host} -p {pg_port} -U {user} -O {user} {database}"
            ),
            "postgresql+psycopg://calmon:PASSWORD@127.0.0.1:5432/calmon": url,
        },
    )
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = {"CALMON_PORT": str(port), **({"PGPASSWORD": base.password} if base.password else {})}
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        log = tmp_path / "postgresql-section.log"
        with background_script(script, tmp_path, env, log) as process:
            wait_ready(base_url, process, log, timeout=90)
            # The tokens are minted in the shell where the section exported the URL.
            first_steps(base_url, tmp_path, {"CALMON_DATABASE_URL": url})
            status = httpx.get(
                f"{base_url}/v1/models/card-fraud/status", headers=_read_headers(tmp_path, url)
            ).json()
            assert [w["stopped_at"] for w in status["workers"]] == [None], status
        # "A worker stopped with SIGTERM ... stops counting as alive", and `calmon serve`
        # without a live worker says at start that windows would wait.
        lines = script.strip().splitlines()
        assert lines[-1] == ".venv/bin/calmon serve"
        serve_alone = "\n".join(
            line for line in lines if not line.startswith(("createdb", ".venv/bin/calmon worker"))
        )
        log = tmp_path / "serve-alone.log"
        with background_script(serve_alone, tmp_path, env, log) as process:
            wait_ready(base_url, process, log, timeout=60)
        assert "no_worker_heartbeat" in log.read_text()
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        admin.dispose()


def _read_headers(workdir: Path, url: str) -> dict[str, str]:
    token = subprocess.run(
        [".venv/bin/calmon", "token", "create", "--name", "readme-check", "--scopes", "read"],
        cwd=workdir,
        env=clean_environment({"CALMON_DATABASE_URL": url}),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {"Authorization": f"Bearer {token}"}
