"""Structured logging: one parseable JSON object per line, extra fields as keys."""

from __future__ import annotations

import json
import logging

from app.observability.logging import JsonLinesFormatter


def _record(message: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("calmon.test", logging.WARNING, __file__, 1, message, None, None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_event_and_extra_fields_become_keys() -> None:
    line = JsonLinesFormatter().format(_record("token_created", token_name="ops", scopes=["read"]))
    payload = json.loads(line)
    assert payload["event"] == "token_created"
    assert payload["level"] == "warning"
    assert payload["logger"] == "calmon.test"
    assert payload["token_name"] == "ops"
    assert payload["scopes"] == ["read"]
    assert payload["ts"].endswith("+00:00")


def test_multiline_exceptions_stay_on_one_line() -> None:
    try:
        raise ValueError("first\nsecond")
    except ValueError as exc:
        record = _record("failed")
        record.exc_info = (type(exc), exc, exc.__traceback__)
    line = JsonLinesFormatter().format(record)
    assert "\n" not in line
    assert "ValueError: first\nsecond" in json.loads(line)["exception"]


def test_values_json_cannot_encode_are_rendered_as_text() -> None:
    line = JsonLinesFormatter().format(_record("odd", value=object(), raw=b"\x00"))
    payload = json.loads(line)
    assert payload["value"].startswith("<object object")
    assert payload["raw"] == "b'\\x00'"
