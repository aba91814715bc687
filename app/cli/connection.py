"""How a command reaches a running service: ``--url``/``CALMON_URL``, ``--token``/
``CALMON_TOKEN``, ``--retries``, and a countdown on stderr while a request waits to be sent
again (a dead URL says so at once instead of retrying silently for a quarter of a minute)."""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from typing import Any, TextIO

from app.client.environment import TOKEN_ENV, URL_ENV
from app.client.http import CalmonClient, Retry
from app.settings import Settings

DEFAULT_RETRIES = 5


def given_url(args: argparse.Namespace) -> str | None:
    """--url, else CALMON_URL; None when neither is set (a command with a local mode then
    uses the database instead: a URL given or set always means HTTP)."""
    url: str | None = getattr(args, "url", None) or os.environ.get(URL_ENV)
    return url


def service_url(args: argparse.Namespace, settings: Settings) -> str:
    """--url, else CALMON_URL, else the address `calmon serve` listens on by default."""
    return given_url(args) or f"http://{settings.host}:{settings.port}"


def service_token(args: argparse.Namespace) -> str | None:
    """--token, else CALMON_TOKEN (better: it stays out of the process list)."""
    token: str | None = args.token or os.environ.get(TOKEN_ENV)
    return token


def add_client_arguments(parser: argparse.ArgumentParser) -> None:
    """--url, --token and --retries, shared by the commands that talk to a running service."""
    parser.add_argument("--url", help=f"the service (default: ${URL_ENV} or CALMON_HOST:PORT)")
    parser.add_argument("--token", help=f"an API token (default: ${TOKEN_ENV})")
    parser.add_argument(
        "--retries",
        type=int,
        default=DEFAULT_RETRIES,
        help="re-sends of a request on a connection error or 5xx, with a countdown on stderr "
        f"(default: {DEFAULT_RETRIES})",
    )


def open_client(args: argparse.Namespace, settings: Settings, **options: Any) -> CalmonClient:
    """A client of the service the arguments name, showing a countdown before each retry."""
    # httpx logs a line per request at INFO: the command prints what matters itself.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    return CalmonClient(
        service_url(args, settings),
        service_token(args),
        retries=args.retries,
        wait=countdown,
        **options,
    )


def countdown(retry: Retry, stream: TextIO | None = None) -> None:
    """Wait ``retry.delay`` seconds, saying why and how long on stderr: on a terminal one line
    counting down each second, elsewhere (a log, a pipe) one line per retry."""
    out = stream or sys.stderr
    said = f"calmon: {retry.reason}; retry {retry.attempt} of {retry.retries} in"
    if not out.isatty():
        print(f"{said} {retry.delay:.1f} s", file=out, flush=True)
        time.sleep(retry.delay)
        return
    deadline = time.monotonic() + retry.delay
    while (left := deadline - time.monotonic()) > 0:
        print(f"\r{said} {math.ceil(left)} s ", end="", file=out, flush=True)
        time.sleep(min(left, 1.0))
    print(f"\r{said} 0 s, retrying", file=out, flush=True)
