"""Structured logging: one JSON object per line on stderr.

Log with an event name as the message and the facts as ``extra`` fields::

    logger.info("token_created", extra={"token_name": name, "scopes": scopes})

Every non-standard attribute of the record becomes a key, so the line stays machine-readable
(Loki, jq) and nobody parses prose.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote_plus

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
) | {"message", "asctime", "color_message", "taskName"}


class JsonLinesFormatter(logging.Formatter):
    """Render a record as a single JSON line: ts, level, logger, event, then extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, ensure_ascii=False)


class SecretQueryFilter(logging.Filter):
    """Blank the value of credential-looking query parameters in uvicorn's access log.

    calmon reads tokens only from the Authorization header, but a client may still put one in
    the URL (``?token=...``); the request is refused, and the secret must not be kept in logs.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn.access logs (client, method, path with query, http version, status).
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (*args[:2], _redact_query(args[2]), *args[3:])
        return True


_SECRET_PARAMETERS = frozenset({"token", "access_token", "api_key", "apikey", "key", "secret"})


def _redact_query(path: str) -> str:
    base, separator, query = path.partition("?")
    if not separator:
        return path
    parts = []
    for part in query.split("&"):
        name, equals, _value = part.partition("=")
        secret = equals and unquote_plus(name).lower() in _SECRET_PARAMETERS
        parts.append(f"{name}=[redacted]" if secret else part)
    return f"{base}?{'&'.join(parts)}"


def configure_logging(level: str = "info") -> None:
    """Send every logger (calmon, uvicorn, alembic) to stderr as JSON lines at ``level``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLinesFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "alembic"):
        # Their own handlers would print a second, non-JSON copy of each line.
        named = logging.getLogger(name)
        named.handlers.clear()
        named.propagate = True
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, SecretQueryFilter) for f in access.filters):
        access.addFilter(SecretQueryFilter())
