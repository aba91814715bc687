"""`calmon status`, `calmon alerts [MODEL]`, `calmon metrics MODEL`: what a running service
shows, read over HTTP (``--url``/``CALMON_URL``, ``--token``/``CALMON_TOKEN``), as a table or
``--json``."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from app.cli.commands import add_command
from app.cli.connection import add_client_arguments, open_client, service_token
from app.cli.output import print_json, table
from app.settings import Settings


def _cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    with open_client(args, settings) as client:
        client.health()  # retried with a countdown while nothing answers
        ready, readiness = client.readiness()
        models = (
            [client.status(m["name"]) for m in client.models()] if service_token(args) else None
        )
    if args.json:
        print_json(
            {"url": client.base_url, "ready": ready, "readiness": readiness, "models": models}
        )
    else:
        print(*_status_lines(client.base_url, readiness if not ready else None, models), sep="\n")
    return 0 if ready else 1


STATUS_COLUMNS = (
    "model", "windows", "newest complete", "dirty", "failing", "parked", "lag s", "workers"
)  # fmt: skip


def _status_lines(
    url: str, refusal: dict[str, Any] | None, models: list[dict[str, Any]] | None
) -> list[str]:
    """The service's state (``refusal``: /readyz's answer when it is not ready), then each
    model's queue, or why there is none to show."""
    if refusal is None:
        lines = [f"{url}: up, ready"]
    else:
        lines = [f"{url}: up, NOT READY", f"  {refusal.get('error', {}).get('message', refusal)}"]
    if models is None:
        return [*lines, "models: pass --token or set CALMON_TOKEN (read scope) to list them"]
    if not models:
        return [*lines, "no model registered yet"]
    rows = [
        (
            s["model"],
            s["windows"],
            s["latest_complete_window"],
            s["dirty_windows"],
            s["failing_windows"],
            s["parked_windows"],
            round(s["worker_lag_seconds"]),
            _workers(s["workers"]),
        )
        for s in models
    ]
    return [*lines, *table(STATUS_COLUMNS, rows)]


def _workers(workers: list[dict[str, Any]]) -> str:
    running = sum(1 for w in workers if w["stopped_at"] is None)
    return f"{running} running" if workers else "none seen"


def add_status(subparsers: Any) -> None:
    """Register `calmon status`."""
    parser = add_command(
        subparsers,
        "status",
        _cmd_status,
        help="the service: up, ready, and each model's windows and workers",
        description="Whether the service answers (/healthz) and takes writes (/readyz), then, "
        "with a read token, each model's windows, the worker queue and its workers. Exit 1 when "
        "the service is not ready.",
    )
    parser.add_argument("--json", action="store_true", help="the answers as JSON")
    add_client_arguments(parser)


def _cmd_alerts(args: argparse.Namespace, settings: Settings) -> int:
    with open_client(args, settings) as client:
        names = [args.model] if args.model else [m["name"] for m in client.models()]
        answers = [client.alerts(name) for name in names]
    if args.json:
        print_json(answers[0] if args.model else answers)
        return 0
    headers = ("model", "segment", "state", "signals", "evidence", "pages above", "newest judged")
    rows = [
        (
            answer["model"],
            s["segment"],
            s["state"],
            s["signals"],
            s["drop_evidence"],
            s["threshold"],
            s["newest_judged_window"],
        )
        for answer in answers
        for s in answer["segments"]
    ]
    print(*table(headers, rows), sep="\n")
    for answer in answers:
        for s in answer["segments"]:
            if s["reason"]:
                print(f"{answer['model']} {s['segment']}: {s['reason']}")
    return 0


def add_alerts(subparsers: Any) -> None:
    """Register `calmon alerts`."""
    parser = add_command(
        subparsers,
        "alerts",
        _cmd_alerts,
        help="the alert state of a model's segments (of every model without MODEL)",
    )
    parser.add_argument("model", nargs="?", help="one model (default: every model)")
    parser.add_argument("--json", action="store_true", help="the answer as JSON")
    add_client_arguments(parser)


METRIC_COLUMNS = ("window_start", "n", "positives", "pi", "regular", "calibrated", "verdict")


def _cmd_metrics(args: argparse.Namespace, settings: Settings) -> int:
    with open_client(args, settings) as client:
        points = client.metrics(
            args.model, args.metric, segment=args.segment, start=args.start, end=args.end
        )
    if args.json:
        print_json(points)
        return 0
    if not points:
        print(f"{args.model}: no computed window of {args.metric} (segment {args.segment}) yet")
        return 0
    rows = [[p[name] for name in METRIC_COLUMNS] for p in points]
    print(*table(METRIC_COLUMNS, rows), sep="\n")
    return 0


def _instant(text: str) -> datetime:
    """An ISO-8601 time with its offset, as the API takes window starts (a time without one
    is refused there too: which midnight it means depends on where you are)."""
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r}: an ISO-8601 time with its offset, e.g. 2026-01-06T00:00:00Z"
        )
    return instant


def period_arguments(parser: argparse.ArgumentParser) -> None:
    """--segment, --from, --to: the windows a read covers."""
    parser.add_argument("--segment", default="all", help="segment (default: all)")
    parser.add_argument(
        "--from", dest="start", type=_instant, help="first window start, e.g. 2026-01-06T00:00:00Z"
    )
    parser.add_argument("--to", dest="end", type=_instant, help="last window start, exclusive")


def add_metrics(subparsers: Any) -> None:
    """Register `calmon metrics`."""
    parser = add_command(
        subparsers,
        "metrics",
        _cmd_metrics,
        help="one metric's series of a model, a window a line (or --json)",
    )
    parser.add_argument("model")
    parser.add_argument(
        "--metric", required=True, help="a registry metric, e.g. average_precision, precision"
    )
    period_arguments(parser)
    parser.add_argument("--json", action="store_true", help="the points as JSON")
    add_client_arguments(parser)
