"""The `calmon` command: serve, worker, migrate, token, send, demo, status, alerts, metrics,
whatif, compare, advice, alert-log.

Each subcommand is one ``add`` function in ``COMMANDS`` that registers its parser and handler,
one module per group: the processes (``server``), tokens (``tokens``), what a running service
shows (``reads``), the analyses (``analyses``), importing a file (``send``); ``demo`` and
``alert-log`` live beside their code in app.demo and app.observability. A new command is one
more function in that list. The commands that talk to a service share ``connection`` (URL,
token, retries with a countdown); the ones that open the database share ``database``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version

import httpx
from pydantic import ValidationError

from app.cli.analyses import add_advice, add_compare, add_whatif
from app.cli.commands import Handler, Subparsers
from app.cli.reads import add_alerts, add_metrics, add_status
from app.cli.send import add_send
from app.cli.server import add_migrate, add_serve, add_worker
from app.cli.tokens import add_token
from app.client.http import CalmonAPIError
from app.demo.command import add_demo
from app.errors import CalmonError
from app.observability.alert_log import add_alert_log
from app.observability.logging import configure_logging
from app.settings import Settings, SettingsError, describe_invalid, get_settings

COMMANDS: list[Callable[[Subparsers], None]] = [
    add_serve,
    add_worker,
    add_migrate,
    add_token,
    add_send,
    add_demo,
    add_status,
    add_alerts,
    add_metrics,
    add_whatif,
    add_compare,
    add_advice,
    add_alert_log,
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="calmon", description="Prior-calibrated monitoring for rare-positive classifiers."
    )
    parser.add_argument("--version", action="version", version=f"calmon {version('calmon')}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def run(argv: Sequence[str], settings: Settings) -> int:
    """Parse ``argv`` and run the subcommand with ``settings``; returns the exit code."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args, settings)
    except CalmonError as exc:
        # Domain errors carry a readable message; show it rather than a traceback.
        print(f"calmon: {exc.message}", file=sys.stderr)
    except CalmonAPIError as exc:
        print(f"calmon: {exc}", file=sys.stderr)
    except BrokenPipeError:
        # The reader of stdout left (`calmon whatif ... | head`): not an error worth a trace.
        # Python's own recipe: what is left to flush at exit goes nowhere, with no second error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except httpx.TransportError as exc:
        # Raised once the retries (and their countdown) are spent.
        print(f"calmon: cannot reach {_address(exc)}: {exc}", file=sys.stderr)
    except Exception as exc:
        reason = _database_unusable(exc, settings)
        if reason is None:
            raise
        print(f"calmon: {reason}", file=sys.stderr)
    return 1


def _address(exc: httpx.TransportError) -> str:
    try:
        return str(exc.request.url.copy_with(query=None))
    except RuntimeError:  # an error raised before any request was made
        return "the service"


def _database_unusable(exc: Exception, settings: Settings) -> str | None:
    """What to say when ``exc`` is the database refusing a connection or a statement; None
    for any other error. A command that never imported SQLAlchemy cannot have raised one."""
    if "sqlalchemy" not in sys.modules:
        return None
    from sqlalchemy.exc import OperationalError  # noqa: PLC0415

    from app.db.engine import redacted_url  # noqa: PLC0415

    if not isinstance(exc, OperationalError):
        return None
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return f"cannot use the database {redacted_url(settings.database_url)}: {reason}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `calmon` console script."""
    try:
        settings = get_settings()
    except (ValidationError, SettingsError) as exc:
        # Before anything starts, one line an operator can act on (no traceback to read).
        print(f"calmon: invalid configuration: {describe_invalid(exc)}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    # Alembic says seven things at INFO each time a command opens the database (its plugins,
    # its context); the command logs its own "migrating"/"migrated". Its warnings and errors
    # still show.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    return run(sys.argv[1:] if argv is None else argv, settings)
