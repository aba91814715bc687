"""`calmon demo`: a model with a realistic history in under a minute, and where to look.

Without ``--url`` it starts its own `calmon serve` on a SQLite file of its own
(``<data-dir>/calmon-demo.sqlite3``, recreated each run) with the embedded worker; with
``--url`` and an admin token it uses a running service and waits for that service's workers.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from app.client.http import CalmonAPIError, CalmonClient
from app.client.send_command import TOKEN_ENV, URL_ENV
from app.demo.stream import REFERENCE_DAYS, UNLABELLED_DAYS, DemoDay, days
from app.settings import Settings

DEMO_DATABASE = "calmon-demo.sqlite3"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    """Run the demo; 0 once the model's verdicts show the prior shift and the drop."""
    for noisy in ("httpx", "alembic"):  # not a line per request or per migration
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return _demo(args, settings)
    except CalmonAPIError as error:
        hint = " (pass --model another-name)" if error.status_code == 409 else ""
        _say(f"calmon demo: {error}{hint}")
    except (RuntimeError, TimeoutError, httpx.TransportError) as error:
        _say(f"calmon demo: {error}")
    return 1


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    started = time.monotonic()
    if args.url:
        token = args.token or os.environ.get(TOKEN_ENV)
        if not token:
            _say(
                f"calmon: --url needs an admin token with ingest and read (--token or ${TOKEN_ENV})"
            )
            return 1
        return _run(args, args.url.rstrip("/"), token, started, None)
    data_dir = Path(args.data_dir or settings.data_dir).resolve()
    # The port `calmon serve` would take: CALMON_PORT (8000 unless set) applies to both.
    with _local_service(data_dir, args.port or settings.port) as (url, token, server):
        code = _run(args, url, token, started, server)
        if code == 0 and not args.exit:
            _say("serving until Ctrl-C")
            _wait_for_interrupt(server)
        return code


@contextmanager
def _local_service(data_dir: Path, port: int) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """A fresh demo database, an admin token in it, and `calmon serve` on it."""
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
    # The caller's other settings (CALMON_BOOTSTRAP_REPLICATES...) apply; the database and
    # its embedded worker are the demo's.
    env = {**os.environ, "CALMON_DATABASE_URL": url, "CALMON_WORKER_EMBEDDED": "true"}
    env.setdefault("CALMON_LOG_LEVEL", "warning")
    log = (data_dir / "calmon-demo-server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base_url, server, data_dir / "calmon-demo-server.log")
        yield base_url, token, server
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
        log.close()


def _wait_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(
                f"its calmon serve exited ({server.returncode}; port in use? try --port); see {log}"
            )
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"calmon serve did not become ready; see {log}")


def _run(
    args: argparse.Namespace,
    url: str,
    token: str,
    started: float,
    server: subprocess.Popen[bytes] | None,
) -> int:
    model = args.model
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    stream = days(args.days, args.rows_per_day, last_day=yesterday)
    late = stream[-args.late_days :]
    with CalmonClient(url, token) as client:
        client.create_model(
            model,
            0.5,
            granularity="day",
            timezone="UTC",
            reference_windows=REFERENCE_DAYS,
            reference_min_positives=100,
        )
        _say(f"model {model} registered at {url}")
        rows = 0
        for number, day in enumerate(stream):
            known = number < len(stream) - len(late)
            sent = client.send(
                model,
                ids=day.ids,
                timestamps=day.timestamps,
                scores=day.scores,
                labels=day.labels if known else None,
                segments=day.segments,
                prefix=f"demo-{day.day.isoformat()}",
            )
            rows += sent.rows
        _say(
            f"sent {rows:,} predictions over {len(stream)} days; the last {len(late)} days "
            "without labels"
        )
        _wait_worker(client, model, args.timeout)
        chargebacks = late[:-UNLABELLED_DAYS] if UNLABELLED_DAYS else late
        labelled = _send_labels(client, model, chargebacks)
        _say(f"label feed: {labelled:,} late labels for {len(chargebacks)} days")
        verdicts = _wait_verdicts(client, model, args.timeout)
        alerts = client.alerts(model)
    _say(f"done in {time.monotonic() - started:.0f} s")
    _print_summary(
        url,
        token,
        model=model,
        verdicts=verdicts,
        alerts=alerts,
        stream=stream,
        local=server is not None and not args.exit,
    )
    return 0 if {"prior_shift", "performance_drop"} <= set(verdicts) else 1


def _send_labels(client: CalmonClient, model: str, chargebacks: list[DemoDay]) -> int:
    total = 0
    for day in chargebacks:
        result = client.send_labels(model, ids=day.ids, labels=day.labels)
        total += result.rows_updated + result.rows_unchanged
    return total


def _wait_worker(client: CalmonClient, model: str, timeout: float) -> None:
    """Until no window of the model waits; says so if no worker is seen at all."""
    deadline = time.monotonic() + timeout
    warned = False
    while time.monotonic() < deadline:
        status = client.status(model)
        if status["dirty_windows"] == 0:
            return
        if not status["workers"] and not warned and time.monotonic() > deadline - timeout + 15:
            _say("no worker heartbeat yet: is a `calmon worker` running for this service?")
            warned = True
        time.sleep(0.5)
    raise TimeoutError(f"the worker did not compute the windows within {timeout:.0f} s")


def _wait_verdicts(client: CalmonClient, model: str, timeout: float) -> dict[str, int]:
    """Verdict counts of segment ``all`` once every mature window is judged."""
    deadline = time.monotonic() + timeout
    while True:
        _wait_worker(client, model, max(deadline - time.monotonic(), 1.0))
        points = client.metrics(model, "average_precision")
        mature = [p for p in points if p["label_coverage"] >= 0.8]
        if mature and all(p["judged"] for p in mature) and len(mature) < len(points):
            return dict(Counter(p["verdict"] for p in points))
        if time.monotonic() > deadline:
            raise TimeoutError(f"the verdicts were not issued within {timeout:.0f} s")
        time.sleep(0.5)


def _print_summary(
    url: str,
    token: str,
    *,
    model: str,
    verdicts: dict[str, int],
    alerts: dict[str, Any],
    stream: list[DemoDay],
    local: bool,
) -> None:
    shown = ", ".join(f"{verdict} {count}" for verdict, count in sorted(verdicts.items()))
    first = stream[0].day.isoformat()
    print(f"verdicts of {model} (segment all, one a day): {shown}")
    print(f"alert state: {alerts['state']}")
    print()
    print("Where to look" + (" (served until Ctrl-C):" if local else ":"))
    print(f"  {url}/  the web UI (paste the token below)")
    print(f"  {url}/docs  the interactive API")
    print(f"  {url}/v1/models/{model}/alerts  the page, and why")
    print(f"  {url}/metrics  what Prometheus scrapes")
    print()
    print(f"export {TOKEN_ENV}={token}")
    print(f"export {URL_ENV}={url}")
    query = f"metric=average_precision&segment=all&from={first}T00:00:00Z"
    auth = f'-H "Authorization: Bearer ${TOKEN_ENV}"'
    for path in ("alerts", f"metrics?{query}", "status"):
        print(f'curl -sS {auth} "${URL_ENV}/v1/models/{model}/{path}"')


def _wait_for_interrupt(server: subprocess.Popen[bytes]) -> None:
    try:
        server.wait()
    except KeyboardInterrupt:
        _say("stopping")


def add_demo(subparsers: Any) -> None:
    """Register `calmon demo`."""
    parser = subparsers.add_parser(
        "demo",
        help="start a service with a demo model whose verdicts show a prior shift and a drop",
        description="Register a model, send it six weeks of card-fraud predictions (fraud-rate "
        "swings, then a degrading model, late labels), wait for its verdicts and say where to "
        "look. Without --url it serves its own SQLite file until Ctrl-C.",
    )
    parser.add_argument("--url", help="use this running service instead of starting one")
    parser.add_argument("--token", help=f"with --url: an admin,ingest,read token (or ${TOKEN_ENV})")
    parser.add_argument(
        "--port", type=int, help="port of the demo's own service (default: CALMON_PORT, 8000)"
    )
    parser.add_argument("--data-dir", help="directory of the demo's database (CALMON_DATA_DIR)")
    parser.add_argument("--model", default="demo-card-fraud", help="the demo model's name")
    parser.add_argument("--days", type=int, default=42, help="days of history (at least 35)")
    parser.add_argument("--rows-per-day", type=int, default=8_000, help="at least 2,000")
    parser.add_argument("--late-days", type=int, default=5, help="days sent without labels")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait the worker")
    parser.add_argument("--exit", action="store_true", help="stop once the verdicts are in")
    parser.set_defaults(handler=cmd_demo)
