"""`calmon token create|list|revoke`: API tokens, minted in the database `calmon serve` uses
(the one command that must work before any token exists, so it cannot go over HTTP)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from app.cli.commands import add_command
from app.cli.database import in_transaction
from app.schemas.tokens import SCOPES, Scope
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


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


def _token_act(args: argparse.Namespace, session: Session) -> None:
    from app.services import audit  # noqa: PLC0415
    from app.services import tokens as token_service  # noqa: PLC0415

    if args.token_command == "create":
        created = token_service.create_token(session, args.name, args.scopes, args.models)
        audit.record(
            session, audit.COMMAND_LINE, "token.created", detail=audit.token_detail(created)
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
            session, audit.COMMAND_LINE, "token.revoked", detail=audit.token_detail(revoked)
        )
        print(f"token {revoked.id} ({revoked.name}) revoked", file=sys.stderr)


def _cmd_token(args: argparse.Namespace, settings: Settings) -> int:
    in_transaction(settings, "token", lambda session: _token_act(args, session))
    return 0


def add_token(subparsers: Any) -> None:
    """Register `calmon token`."""
    parser = add_command(subparsers, "token", _cmd_token, help="create, list or revoke API tokens")
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
