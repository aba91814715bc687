"""Liveness and readiness probes (open: no token needed)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from app.api.write_health import WriteHealth
from app.db.health import check_writable
from app.db.trouble import describe
from app.errors import ServiceUnavailableError
from app.settings import Settings

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    """The process is up and serving HTTP."""
    return {"status": "ok"}


@router.get("/readyz")
def readyz(request: Request) -> dict[str, str]:
    """The database takes writes now, this server's last write did not fail, and the schema
    is the one this code expects (503 otherwise), answered within
    CALMON_READINESS_TIMEOUT_SECONDS."""
    engine: Engine = request.app.state.probe_engine
    settings: Settings = request.app.state.settings
    expected: tuple[str, ...] = request.app.state.expected_revisions
    health: WriteHealth = request.app.state.write_health
    try:
        current = check_writable(engine, settings.readiness_timeout_seconds)
    except SQLAlchemyError as exc:
        raise ServiceUnavailableError(
            f"the database is not ready for writes: {describe(exc)}",
            extra={"reason": type(exc).__name__},
        ) from exc
    if set(current) != set(expected):
        raise ServiceUnavailableError(
            "database schema is not at the expected revision: run `calmon migrate`",
            extra={"current": list(current), "expected": list(expected)},
        )
    standing = health.after_probe_write()
    if standing is not None:
        failure, age = standing
        raise ServiceUnavailableError(
            f"a write failed {age:.1f} s ago and none has succeeded since: {failure.reason}",
            extra={"reason": "write_failed"},
        )
    return {"status": "ready", "schema_revision": ",".join(sorted(current))}
