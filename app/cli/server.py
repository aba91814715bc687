"""`calmon serve`, `calmon worker`, `calmon migrate`: the processes of a deployment."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from app.cli.commands import add_command
from app.cli.database import migrate, require_existing_sqlite
from app.settings import Settings

logger = logging.getLogger("calmon.cli")


def _cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here, not at the top: the web stack takes seconds to import, and `calmon token`
    # or `calmon migrate` should not pay for it.
    import uvicorn  # noqa: PLC0415

    from app.api.app import create_app  # noqa: PLC0415
    from app.worker.runner import embedded_worker_hook, missing_worker_hook  # noqa: PLC0415

    if settings.should_migrate_on_start:
        migrate(settings)
    embedded = settings.should_embed_worker
    hooks = [embedded_worker_hook(settings) if embedded else missing_worker_hook(settings)]
    app = create_app(settings, lifespan_hooks=hooks)
    host = args.host or settings.host
    port = args.port or settings.port
    logger.info("serving", extra={"host": host, "port": port})
    uvicorn.run(app, host=host, port=port, log_config=None, log_level=settings.log_level)
    return 0


def add_serve(subparsers: Any) -> None:
    """Register `calmon serve`."""
    parser = add_command(subparsers, "serve", _cmd_serve, help="run the HTTP API (uvicorn)")
    parser.add_argument("--host", help="bind address (default: CALMON_HOST)")
    parser.add_argument("--port", type=int, help="port (default: CALMON_PORT)")


def _cmd_worker(_args: argparse.Namespace, settings: Settings) -> int:
    require_existing_sqlite(settings, "worker")
    # The worker pulls in numpy, the kernel and FastAPI (its runner also serves the embedded
    # hook): imported here so `calmon token` and `calmon migrate` start without them.
    from app.worker.runner import run_worker_process  # noqa: PLC0415

    return run_worker_process(settings)


def add_worker(subparsers: Any) -> None:
    """Register `calmon worker`."""
    add_command(
        subparsers,
        "worker",
        _cmd_worker,
        help="compute dirty windows (any number of workers may run; SIGTERM stops)",
    )


def _cmd_migrate(_args: argparse.Namespace, settings: Settings) -> int:
    migrate(settings)
    return 0


def add_migrate(subparsers: Any) -> None:
    """Register `calmon migrate`."""
    add_command(
        subparsers, "migrate", _cmd_migrate, help="upgrade the database schema to the latest"
    )
