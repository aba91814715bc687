"""The `calmon` command: serve, worker, migrate, token, whatif, compare, send, demo.

Each subcommand is one ``add`` function in ``COMMANDS`` that registers its parser and handler
(``_add_<name>`` here; ``send`` and ``demo`` live beside their code in app.client and app.demo),
so a new command is one more function in that list.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from app.client.send_command import add_send
from app.demo.command import add_demo
from app.errors import CalmonError, PayloadValidationError, ServiceUnavailableError
from app.observability.alert_log import add_alert_log
from app.observability.logging import configure_logging
from app.schemas.tokens import SCOPES, Scope
from app.settings import Settings, SettingsError, describe_invalid, get_settings

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

# The database stack (SQLAlchemy, Alembic, the services) is imported by the commands that use a
# database, not here: `calmon send` and `calmon demo` talk HTTP only, and importing it cost their
# every start about a third of a second.

logger = logging.getLogger("calmon.cli")

Handler = Callable[[argparse.Namespace, Settings], int]
Subparsers = Any  # argparse's _SubParsersAction is private API


def _migrate(settings: Settings) -> None:
    from app.db.engine import redacted_url  # noqa: PLC0415
    from app.db.migrate import upgrade  # noqa: PLC0415

    logger.info("migrating", extra={"database": redacted_url(settings.database_url)})
    upgrade(settings.database_url)
    logger.info("migrated")


def _require_existing_sqlite(settings: Settings, command: str) -> None:
    """Refuse to create a new SQLite file by accident.

    The default database is ``var/calmon.sqlite3`` relative to the working directory, so a
    command run from another directory would otherwise create a fresh, empty database there
    (and a token the running server does not know).
    """
    if not settings.is_sqlite:
        return
    from sqlalchemy import make_url  # noqa: PLC0415

    database = make_url(settings.database_url).database
    if not database or database == ":memory:" or Path(database).exists():
        return
    raise ServiceUnavailableError(
        f"no calmon database at {Path(database).resolve()}: `calmon {command}` works on the "
        "database `calmon serve` uses. Run it in the directory where `calmon serve` runs, or "
        "set CALMON_DATA_DIR or CALMON_DATABASE_URL to that database; `calmon migrate` creates "
        "a new one here"
    )


def _cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here, not at the top: the web stack takes seconds to import, and `calmon token`
    # or `calmon migrate` should not pay for it.
    import uvicorn  # noqa: PLC0415

    from app.api.app import create_app  # noqa: PLC0415
    from app.worker.runner import embedded_worker_hook, missing_worker_hook  # noqa: PLC0415

    if settings.should_migrate_on_start:
        _migrate(settings)
    embedded = settings.should_embed_worker
    hooks = [embedded_worker_hook(settings) if embedded else missing_worker_hook(settings)]
    app = create_app(settings, lifespan_hooks=hooks)
    host = args.host or settings.host
    port = args.port or settings.port
    logger.info("serving", extra={"host": host, "port": port})
    uvicorn.run(app, host=host, port=port, log_config=None, log_level=settings.log_level)
    return 0


def _add_serve(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("serve", help="run the HTTP API (uvicorn)")
    parser.add_argument("--host", help="bind address (default: CALMON_HOST)")
    parser.add_argument("--port", type=int, help="port (default: CALMON_PORT)")
    parser.set_defaults(handler=_cmd_serve)


def _cmd_worker(_args: argparse.Namespace, settings: Settings) -> int:
    _require_existing_sqlite(settings, "worker")
    # The worker pulls in numpy, the kernel and FastAPI (its runner also serves the embedded
    # hook): imported here so `calmon token` and `calmon migrate` start without them.
    from app.worker.runner import run_worker_process  # noqa: PLC0415

    return run_worker_process(settings)


def _add_worker(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "worker", help="compute dirty windows (any number of workers may run; SIGTERM stops)"
    )
    parser.set_defaults(handler=_cmd_worker)


def _cmd_migrate(_args: argparse.Namespace, settings: Settings) -> int:
    _migrate(settings)
    return 0


def _add_migrate(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("migrate", help="upgrade the database schema to the latest")
    parser.set_defaults(handler=_cmd_migrate)


def _parse_scopes(text: str) -> list[Scope]:
    scopes = [s.strip() for s in text.split(",") if s.strip()]
    valid = [s for s in scopes if s in SCOPES]
    if not scopes or len(valid) != len(scopes):
        raise argparse.ArgumentTypeError(f"scopes are a comma-separated subset of {SCOPES}")
    return valid


def _parse_models(text: str) -> list[str]:
    from pydantic import TypeAdapter, ValidationError  # noqa: PLC0415

    from app.schemas.tokens import ModelPattern  # noqa: PLC0415

    patterns = [p.strip() for p in text.split(",") if p.strip()]
    try:
        if patterns:  # an empty list must not silently become "every model"
            return TypeAdapter(list[ModelPattern]).validate_python(patterns)
    except ValidationError:
        pass
    raise argparse.ArgumentTypeError(
        "models are comma-separated model names or prefixes ending in '*' (team-a-*)"
    )


def _ensure_schema(settings: Settings, engine: Engine) -> None:
    """Migrate the embedded database if needed; elsewhere say what to run instead of failing
    later with "no such table"."""
    from app.db.migrate import current_revisions, head_revisions  # noqa: PLC0415

    if set(current_revisions(engine)) == set(head_revisions(settings.database_url)):
        return
    if not settings.should_migrate_on_start:
        raise ServiceUnavailableError("the database schema is not current: run `calmon migrate`")
    _migrate(settings)


def _cmd_token(args: argparse.Namespace, settings: Settings) -> int:
    from app.db.engine import create_db_engine, create_session_factory  # noqa: PLC0415
    from app.services import audit  # noqa: PLC0415
    from app.services import tokens as token_service  # noqa: PLC0415

    _require_existing_sqlite(settings, "token")
    engine = create_db_engine(settings)
    try:
        _ensure_schema(settings, engine)
        with create_session_factory(engine).begin() as session:
            if args.token_command == "create":
                created = token_service.create_token(session, args.name, args.scopes, args.models)
                audit.record(
                    session,
                    audit.COMMAND_LINE,
                    "token.created",
                    detail=audit.token_detail(created),
                )
                print(created.token)
                seen = ",".join(created.models) if created.models else "every model"
                print(
                    f"token {created.id} ({created.name}, scopes {','.join(created.scopes)}, "
                    f"models {seen}) created; it is shown only this once",
                    file=sys.stderr,
                )
            elif args.token_command == "list":
                for token in token_service.list_tokens(session):
                    print(json.dumps(token.model_dump(mode="json")))
            else:
                revoked = token_service.revoke_token(session, args.token_id)
                audit.record(
                    session,
                    audit.COMMAND_LINE,
                    "token.revoked",
                    detail=audit.token_detail(revoked),
                )
                print(f"token {revoked.id} ({revoked.name}) revoked", file=sys.stderr)
    finally:
        engine.dispose()
    return 0


def _add_token(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("token", help="create, list or revoke API tokens")
    commands = parser.add_subparsers(dest="token_command", required=True)
    create = commands.add_parser("create", help="create a token and print it once")
    create.add_argument("--name", required=True, help="who or what uses the token")
    create.add_argument(
        "--scopes", required=True, type=_parse_scopes, help="e.g. ingest,read (or admin)"
    )
    create.add_argument(
        "--models",
        type=_parse_models,
        help="limit it to these models: names or prefixes ending in '*', e.g. "
        "card-fraud,web-fraud or 'team-a-*' (default: every model)",
    )
    commands.add_parser("list", help="list tokens as JSON lines (no secrets)")
    revoke = commands.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("token_id", type=int)
    parser.set_defaults(handler=_cmd_token)


def _read_only(
    settings: Settings, command: str, query: Callable[[Session], BaseModel]
) -> BaseModel:
    """Run one read-only service call in its own transaction, as the API would."""
    from app.db.engine import create_db_engine, create_session_factory  # noqa: PLC0415

    _require_existing_sqlite(settings, command)
    engine = create_db_engine(settings)
    try:
        _ensure_schema(settings, engine)
        with create_session_factory(engine).begin() as session:
            return query(session)
    finally:
        engine.dispose()


def _print_json(result: BaseModel) -> None:
    print(json.dumps(result.model_dump(mode="json", by_alias=True), indent=2))


def _trajectory_point(text: str) -> tuple[float, float]:
    try:
        t, pi = text.split(":")
        return float(t), float(pi)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a trajectory point is T:PI, got {text!r}") from None


def _period_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--segment", default="all", help="segment (default: all)")
    parser.add_argument(
        "--from", dest="start", type=datetime.fromisoformat, help="first window start (ISO)"
    )
    parser.add_argument(
        "--to", dest="end", type=datetime.fromisoformat, help="last window start, exclusive"
    )


def _cmd_whatif(args: argparse.Namespace, settings: Settings) -> int:
    from app.schemas.analyses import RangeIn, TrajectoryIn, WhatIfRequest  # noqa: PLC0415
    from app.services.whatif import what_if  # noqa: PLC0415

    try:
        request = WhatIfRequest(
            segment=args.segment,
            start=args.start,
            end=args.end,
            priors=args.pi or [],
            range=RangeIn(
                pi_lo=args.range[0] if args.range else None,
                pi_hi=args.range[1] if args.range else None,
            ),
            trajectory=(
                TrajectoryIn(points=args.trajectory, interpolation=args.interpolation)
                if args.trajectory
                else None
            ),
            intervals=not args.no_intervals,
            replicates=args.replicates,
        )
    except ValidationError as exc:
        raise PayloadValidationError(str(exc)) from exc
    _print_json(
        _read_only(settings, "whatif", lambda session: what_if(session, args.model, request))
    )
    return 0


def _add_whatif(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "whatif", help="a model's metrics at other fraud rates, over a range, along a trajectory"
    )
    parser.add_argument("model")
    _period_arguments(parser)
    parser.add_argument(
        "--pi", type=float, action="append", help="a fraud rate (repeatable; default: pi0, now)"
    )
    parser.add_argument(
        "--range",
        nargs=2,
        type=float,
        metavar=("PI_LO", "PI_HI"),
        help="uncertain range (default: the history's mean +- 3 std)",
    )
    parser.add_argument(
        "--trajectory",
        nargs="+",
        type=_trajectory_point,
        metavar="T:PI",
        help="fraud-rate trajectory points, e.g. 0:0.004 30:0.008",
    )
    parser.add_argument("--interpolation", choices=("linear", "log"), default="linear")
    parser.add_argument("--no-intervals", action="store_true", help="skip the bootstrap")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.set_defaults(handler=_cmd_whatif)


def _cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    from app.schemas.analyses import CompareOut  # noqa: PLC0415
    from app.services.compare import compare  # noqa: PLC0415

    result = _read_only(
        settings,
        "compare",
        lambda session: compare(
            session,
            args.champion,
            args.challenger,
            segment=args.segment,
            start=args.start,
            end=args.end,
            metric=args.metric,
            replicates=args.replicates,
        ),
    )
    assert isinstance(result, CompareOut)
    if args.json:
        _print_json(result)
    else:
        print(result.summary)
    return 0


def _add_compare(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "compare", help="champion vs challenger: who has the higher AP, at which fraud rates"
    )
    parser.add_argument("champion")
    parser.add_argument("challenger")
    _period_arguments(parser)
    parser.add_argument("--metric", default="average_precision", help="series metric")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="the whole comparison as JSON")
    parser.set_defaults(handler=_cmd_compare)


def _cmd_advice(args: argparse.Namespace, settings: Settings) -> int:
    from app.schemas.advice import ThresholdAdviceOut  # noqa: PLC0415
    from app.services.threshold_advice import summary, threshold_advice  # noqa: PLC0415

    result = _read_only(
        settings, "advice", lambda session: threshold_advice(session, args.model, args.segment)
    )
    assert isinstance(result, ThresholdAdviceOut)
    if args.json:
        _print_json(result)
    else:
        print("\n".join(summary(result)))
    return 0


def _add_advice(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "advice", help="which threshold to set now: within the alert budget, restoring precision"
    )
    parser.add_argument("model")
    parser.add_argument("--segment", default="all", help="segment ('all': the whole window)")
    parser.add_argument("--json", action="store_true", help="the whole advice as JSON")
    parser.set_defaults(handler=_cmd_advice)


COMMANDS: list[Callable[[Subparsers], None]] = [
    _add_serve,
    _add_worker,
    _add_migrate,
    _add_token,
    add_send,
    add_demo,
    _add_whatif,
    _add_compare,
    _add_advice,
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
        return 1
    except Exception as exc:
        reason = _database_unusable(exc, settings)
        if reason is None:
            raise
        print(f"calmon: {reason}", file=sys.stderr)
        return 1


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
    return run(sys.argv[1:] if argv is None else argv, settings)


if __name__ == "__main__":
    sys.exit(main())
