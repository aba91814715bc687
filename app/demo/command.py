"""`calmon demo`: a model with a realistic history and label feed in under a minute, the page
its degradation raises on early labels, and where to look.

Without ``--url`` it starts its own `calmon serve` on a SQLite file of its own
(``<data-dir>/calmon-demo.sqlite3``, recreated each run) with the embedded worker; with
``--url`` and an admin token it uses a running service and waits for that service's workers.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from app.client.environment import TOKEN_ENV, URL_ENV
from app.client.http import CalmonAPIError, CalmonClient
from app.demo.feed import Night, backfill, live_night, wait_worker
from app.demo.local_service import demo_port, local_service
from app.demo.report import Page, newest_table, night_header, night_line, verdict_counts
from app.demo.stream import (
    DAYS,
    DEGRADED_DAYS,
    LIVE_DAYS,
    REFERENCE_DAYS,
    ROWS_PER_DAY,
    THRESHOLD,
    DemoDay,
    StreamPlan,
    days,
)
from app.settings import Settings

MIN_DAYS = 60
MIN_ROWS_PER_DAY = 2_000


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    """Run the demo; 0 once the verdicts show the prior shift and the degradation pages."""
    for noisy in ("httpx", "alembic"):  # not a line per request or per migration
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        return _demo(args, settings)
    except CalmonAPIError as error:
        hint = " (pass --model another-name)" if error.status_code == 409 else ""
        _say(f"calmon demo: {error}{hint}")
    except (RuntimeError, TimeoutError, httpx.TransportError) as error:
        _say(f"calmon demo: {error}")
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM before the run was over
        _say("calmon demo: stopped")
        return 130
    return 1


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    started = time.monotonic()
    refused = _refused(args)
    if refused:
        _say(f"calmon demo: {refused}")
        return 2
    if args.url:
        token = args.token or os.environ.get(TOKEN_ENV)
        if not token:
            _say(
                f"calmon: --url needs an admin token with ingest and read (--token or ${TOKEN_ENV})"
            )
            return 1
        return _run(args, args.url.rstrip("/"), token, started, None)
    data_dir = Path(args.data_dir or settings.data_dir).resolve()
    # The port `calmon serve` would take (CALMON_PORT, 8000 unless set), unless it holds it.
    port = demo_port(args.port or settings.port, explicit=args.port is not None)
    with local_service(data_dir, port) as (url, token, server):
        code = _run(args, url, token, started, server)
        if code == 0 and not args.exit:
            _say("serving until Ctrl-C")
            _wait_for_interrupt(server)
        return code


def _refused(args: argparse.Namespace) -> str | None:
    """Why the run's size cannot show what the demo shows, if it cannot."""
    if args.days < MIN_DAYS:
        return f"--days {args.days}: at least {MIN_DAYS} (the reference and swings must mature)"
    if args.rows_per_day < MIN_ROWS_PER_DAY:
        return f"--rows-per-day {args.rows_per_day}: at least {MIN_ROWS_PER_DAY:,}"
    if not DEGRADED_DAYS < args.live_days < args.days:
        return f"--live-days {args.live_days}: more than {DEGRADED_DAYS}, fewer than --days"
    return None


def _run(
    args: argparse.Namespace,
    url: str,
    token: str,
    started: float,
    server: subprocess.Popen[bytes] | None,
) -> int:
    model = args.model
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    plan = StreamPlan(
        days=args.days,
        rows_per_day=args.rows_per_day,
        last_day=yesterday,
        degraded_days=DEGRADED_DAYS,
        seed=args.seed,
    )
    stream = days(plan)
    with CalmonClient(url, token) as client:
        client.create_model(
            model,
            THRESHOLD,
            granularity="day",
            timezone="UTC",
            reference_windows=REFERENCE_DAYS,
            reference_min_positives=100,
            label_horizon_days=plan.feed.horizon_days,
        )
        _say(f"model {model} registered at {url}")
        nights = _send(client, model, stream, plan, args)
        points = client.metrics(model, "average_precision")
        # Two days before the onset and those after it, except the newest: it closed at the
        # last midnight, and no label of it has come yet.
        shown = [
            client.window(model, p["window_start"])
            for p in points
            if plan.onset - timedelta(days=2) <= date.fromisoformat(p["window_start"][:10])
            and date.fromisoformat(p["window_start"][:10]) < plan.last_day
        ]
    last = nights[-1]
    page = next((n for n in nights if n.day.day >= plan.onset and n.paging), None)
    print(f"verdicts of {model} (segment all, one a day): {verdict_counts(points)}")
    print(f"alert state: {last.alert['state']} (signals: {', '.join(last.signals) or 'none'})")
    if page is None:
        print(f"no page yet, {plan.degraded_days} nights after the model degraded")
    else:
        print(*Page(page, plan, stream).lines(), sep="\n")
    print()
    reference = last.alert["reference_average_precision"]
    print(*newest_table(shown, stream, plan, reference), sep="\n")
    local = server is not None and not args.exit
    _print_where(url, token, model=model, first=stream[0].day, local=local)
    sys.stdout.flush()  # before what goes to stderr: one terminal, or one log, shows both
    _say(f"done in {time.monotonic() - started:.0f} s")
    shifted = any(p["verdict"] == "prior_shift" for p in points)
    return 0 if shifted and page is not None and last.paging else 1


def _send(
    client: CalmonClient,
    model: str,
    stream: list[DemoDay],
    plan: StreamPlan,
    args: argparse.Namespace,
) -> list[Night]:
    """The backfill, then the live nights (each printed as it is seen)."""
    history = len(stream) - args.live_days
    rows, labels = backfill(client, model, stream[:history])
    _say(
        f"backfill: {rows:,} predictions of {history} days, and the {labels:,} labels that had "
        "come in by the night after"
    )
    wait_worker(client, model, args.timeout)
    print(*night_header(plan), sep="\n", flush=True)
    nights = []
    for number in range(history, len(stream)):
        night = live_night(client, model, stream[: number + 1], stream[number], args.timeout)
        print(night_line(night, plan), flush=True)
        nights.append(night)
    return nights


def _print_where(url: str, token: str, *, model: str, first: date, local: bool) -> None:
    print()
    print("Where to look" + (" (served until Ctrl-C):" if local else ":"))
    print(f"  {url}/  the web UI (paste the token below)")
    print(f"  {url}/docs  the interactive API")
    print(f"  {url}/v1/models/{model}/alerts  the page, and why")
    print(f"  {url}/metrics  what Prometheus scrapes")
    print()
    print(f"export {TOKEN_ENV}={token}")
    print(f"export {URL_ENV}={url}")
    query = f"metric=average_precision&segment=all&from={first.isoformat()}T00:00:00Z"
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
        help="start a service with a demo model that pages on early labels when it degrades",
        description="Register a model with a 30-day label horizon, backfill two months of "
        "card-fraud predictions with the labels a fraud team gets (feedback on alerts the next "
        "day, chargebacks over weeks), then send the newest days a night at a time while the "
        "model degrades: the alert pages on the early labels, weeks before the days are judged. "
        "Without --url it serves its own SQLite file until Ctrl-C.",
    )
    parser.add_argument("--url", help="use this running service instead of starting one")
    parser.add_argument("--token", help=f"with --url: an admin,ingest,read token (or ${TOKEN_ENV})")
    parser.add_argument(
        "--port", type=int, help="port of the demo's own service (default: CALMON_PORT, 8000)"
    )
    parser.add_argument("--data-dir", help="directory of the demo's database (CALMON_DATA_DIR)")
    parser.add_argument("--model", default="demo-card-fraud", help="the demo model's name")
    parser.add_argument(
        "--days", type=int, default=DAYS, help=f"days of history (at least {MIN_DAYS})"
    )
    parser.add_argument(
        "--rows-per-day", type=int, default=ROWS_PER_DAY, help=f"at least {MIN_ROWS_PER_DAY:,}"
    )
    parser.add_argument(
        "--live-days",
        type=int,
        default=LIVE_DAYS,
        help=f"the newest days, sent a night at a time (more than {DEGRADED_DAYS})",
    )
    parser.add_argument("--seed", type=int, default=7, help="another seed, another stream")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait the worker")
    parser.add_argument("--exit", action="store_true", help="stop once the last night is in")
    parser.set_defaults(handler=cmd_demo)
