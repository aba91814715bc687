"""How fast the web UI draws a big model: 365 daily windows, 10 segments (and "all").

A real ``calmon serve`` (SQLite, embedded worker) is fed a year of the "both" stream (prior drift,
the model sliding over the last weeks) over HTTP, every day's rows spread over 10 segments; once
every window is computed, the system Chromium (Playwright, as in tests/e2e/test_webui.py) opens
each page ``--repeats`` times with requests to other origins blocked and reports, per page, the
median of:

- wall: from ``page.goto`` (or the segment picker's change) to the page drawn, API requests
  included;
- in page: the page's own clock, from its route starting to the page drawn (API included);
- charts: the model page's five charts alone, data already in hand.

    python -m bench.webui [--days 365] [--segments 10] [--rows-per-day 4000] [--repeats 5]
        [--backend sqlite|postgresql] [--database PATH]

``--database PATH`` (SQLite) keeps the seeded database at PATH and, when PATH already holds
one, skips the seeding: two versions of the code (e.g. main's and a branch's) are then timed on
the same data, one after the other, and only their ratio means something.

Seeding takes minutes (the worker computes 365 x 11 window segments with intervals); the page
timings are the point. Timings on a shared machine are noisy: compare them only within one run.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import msgspec
import numpy as np
from playwright.sync_api import Page

from app.db.engine import create_db_engine, create_session_factory
from app.db.migrate import upgrade
from app.services.tokens import create_token
from tests.support.browser import chromium, watched_page
from tests.support.databases import fresh_database, settings_for
from tests.support.server import running_server
from tests.support.streams import StreamSpec, batch_body, stream
from tests.support.waiting import wait_for
from tests.support.worker_process import running_workers

ENV = {
    "CALMON_WORKER_POLL_SECONDS": "0.2",
    "CALMON_BOOTSTRAP_REPLICATES": "200",
}


def _token(database_url: str) -> str:
    engine = create_db_engine(settings_for(database_url))
    try:
        with create_session_factory(engine).begin() as session:
            return create_token(session, "bench", ["admin", "ingest", "read"]).token
    finally:
        engine.dispose()


def _seed(client: httpx.Client, args: argparse.Namespace) -> None:
    spec = StreamSpec(
        "both",
        days=args.days,
        rows_per_day=args.rows_per_day,
        pi_low=0.01,
        pi_high=0.04,
        change_day=args.days - 20,
        drift_per_day=0.05,
        seed=7,
    )
    response = client.post("/v1/models", json={"name": "big", "threshold": 1.5})
    assert response.status_code == 201, response.text
    names = np.array([f"s{i}" for i in range(args.segments)])
    # The stream starts on 2026-01-01; a year of it is moved back so no day lies in the future.
    shift = timedelta(days=args.days)
    for day in stream(spec):
        moved = dataclasses.replace(day, window_start=day.window_start - shift)
        body: dict[str, Any] = batch_body(moved, prefix="big")
        body["columns"]["segment"] = names[np.arange(day.scores.size) % args.segments].tolist()
        response = client.post(
            "/v1/models/big/batches",
            content=msgspec.json.encode(body),
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 201, response.text

    def settled() -> bool:
        status = client.get("/v1/models/big/status").json()
        return bool(status["windows"] == args.days and not status["dirty_windows"])

    wait_for(settled, "every window computed", timeout=3_600, poll=2.0)


def _ready(page: Page, route: str) -> None:
    page.wait_for_selector(f'body[data-ready="{route}"]', state="attached", timeout=60_000)


def _body_ms(page: Page, attribute: str) -> float:
    return float(page.locator("body").get_attribute(attribute) or "nan")


# Resource Timing: first API request sent to last API response received, in the page's clock.
API_SPAN = """(() => {
  const api = performance.getEntriesByType("resource").filter((e) => e.name.includes("/v1/"));
  return api.length ? Math.max(...api.map((e) => e.responseEnd))
    - Math.min(...api.map((e) => e.startTime)) : 0;
})()"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--segments", type=int, default=10)
    parser.add_argument("--rows-per-day", type=int, default=4_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="sqlite: calmon serve with its embedded worker; postgresql: a scratch schema on "
        "CALMON_TEST_DATABASE_URL, the API and two worker processes",
    )
    parser.add_argument(
        "--database",
        type=Path,
        help="a SQLite file kept after the run; seeded only if it does not exist yet",
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="calmon-bench-webui-") as name:
        return _in(args, Path(name))


def _in(args: argparse.Namespace, directory: Path) -> int:
    """The bench, its logs and its SQLite database in ``directory``."""
    args.seed = True
    if args.database is not None:
        seeded = args.database.exists()
        database_url = f"sqlite:///{args.database.resolve().as_posix()}"
        if not seeded:
            upgrade(database_url)
        args.seed = not seeded
        return _run(args, database_url, directory, ENV, nullcontext())
    with fresh_database(args.backend, directory) as database_url:
        if args.backend == "sqlite":
            return _run(args, database_url, directory, ENV, nullcontext())
        upgrade(database_url)
        server_env = {**ENV, "CALMON_WORKER_EMBEDDED": "false"}
        workers = running_workers(database_url, directory, 2, ENV)
        return _run(args, database_url, directory, server_env, workers)


def _run(
    args: argparse.Namespace,
    database_url: str,
    directory: Path,
    env: dict[str, str],
    workers: AbstractContextManager[object],
) -> int:
    timings: dict[str, list[tuple[float, float, float, float]]] = {}
    with running_server(database_url, env=env, log_dir=directory) as server, workers:
        token = _token(database_url)
        headers = {"Authorization": f"Bearer {token}"}
        if args.seed:
            started = time.perf_counter()
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=120.0) as c:
                _seed(c, args)
            seeded = time.perf_counter() - started
            print(f"seeded {args.days} windows x {args.segments} segments in {seeded:.0f} s")
        pages = {
            "models overview": "#/",
            "model page (all)": "#/models/big",
            "model page, segment switch": "#/models/big?segment=s3",
        }
        with chromium() as browser:
            for _ in range(args.repeats):
                for label, route in pages.items():
                    with watched_page(browser, server.base_url) as (page, log):
                        page.add_init_script(
                            f"sessionStorage.setItem('calmon.readToken', {token!r})"
                        )
                        if label.endswith("switch"):
                            page.goto(f"{server.base_url}/ui/#/models/big")
                            _ready(page, "#/models/big")
                            page.evaluate("performance.clearResourceTimings()")  # the switch's own
                            t0 = time.perf_counter()
                            page.select_option("#segment-picker", "s3")
                        else:
                            t0 = time.perf_counter()
                            page.goto(f"{server.base_url}/ui/{route}")
                        _ready(page, route)
                        wall = 1000 * (time.perf_counter() - t0)
                        charts = _body_ms(page, "data-chart-ms") if "model " in label else 0.0
                        api = float(page.evaluate(API_SPAN))
                        timings.setdefault(label, []).append(
                            (wall, _body_ms(page, "data-render-ms"), api, charts)
                        )
                        # What the page asks for after it is drawn (the threshold advice, the
                        # catalogue, the worker's status) finishes before the next load starts:
                        # one load's tail computing on the server must not be timed as the next.
                        page.wait_for_load_state("networkidle")
                        problems = log.problems() + log.blocked
                        if problems:
                            print(f"{label}: {problems}", file=sys.stderr)
                            return 1
    size = f"{args.days} windows, {args.segments} segments, {args.backend}"
    print(f"\n| page ({size}) | wall ms | in page ms | API ms | charts ms |")
    print("|---|---:|---:|---:|---:|")
    for label, runs in timings.items():
        wall, in_page, api, charts = (
            statistics.median(column) for column in zip(*runs, strict=True)
        )
        print(f"| {label} | {wall:.0f} | {in_page:.0f} | {api:.0f} | {charts:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
