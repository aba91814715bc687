"""Registering a subcommand: its parser and the handler that runs it, in one call, so that no
command can be parsed without something to run (``app.cli.run`` calls ``args.handler``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from app.settings import Settings

Handler = Callable[[argparse.Namespace, Settings], int]
Subparsers = Any  # argparse's _SubParsersAction is private API


def add_command(
    subparsers: Subparsers,
    name: str,
    handler: Handler,
    *,
    help: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """The parser of `calmon <name>`, which runs ``handler``; the caller adds its arguments."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help, description=description
    )
    parser.set_defaults(handler=handler)
    return parser
