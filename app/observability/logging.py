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
