"""Liveness and readiness probes (open: no token needed)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

from app.db.migrate import current_revisions
from app.errors import ServiceUnavailableError

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up and serving HTTP."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(request: Request) -> dict[str, str]:
    """The database answers and its schema is the one this code expects (503 otherwise)."""
    engine: Engine = request.app.state.engine
    expected: tuple[str, ...] = request.app.state.expected_revisions
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        current = current_revisions(engine)
    except SQLAlchemyError as exc:
        raise ServiceUnavailableError(
            "database unreachable", extra={"reason": type(exc).__name__}
        ) from exc
    if set(current) != set(expected):
        raise ServiceUnavailableError(
            "database schema is not at the expected revision: run `calmon migrate`",
            extra={"current": list(current), "expected": list(expected)},
        )
    return {"status": "ready", "schema_revision": ",".join(sorted(current))}
