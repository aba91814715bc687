"""The OpenAPI description of the ingest routes' bodies and answers.

The batch and label bodies are read as raw bytes (app.api.ingest_body), so FastAPI cannot
describe them from a schema: these dictionaries do, in the routes' ``openapi_extra`` and
``responses`` (app.api.routers.batches).
"""

from __future__ import annotations

from typing import Any, Final

from app.api import examples

TOO_LARGE: Final = (
    "Too many rows or bytes (a body holding characters past U+00FF may be half of "
    "CALMON_MAX_BODY_BYTES, past U+FFFF a quarter), gzip members or compression ratio"
)
UNAVAILABLE: Final = (
    "The database cannot serve the request now, or CALMON_MAX_CONCURRENT_INGEST ingest "
    "requests are in progress and none finished in time (Retry-After); retry (a batch with "
    "the same batch_id)"
)
_JSON_REF: Final = "#/components/schemas/{}"
BATCH_BODY: Final[dict[str, Any]] = {
    "required": True,
    "description": "Row JSON, columnar JSON or CSV (the Content-Type says which); gzip "
    "with Content-Encoding: gzip, or without it (recognised by its first bytes). CSV takes "
    "its batch_id from X-Batch-Id or ?batch_id=.",
    "content": {
        "application/json": {
            "schema": {
                "oneOf": [
                    {"$ref": _JSON_REF.format("RowBatch")},
                    {"$ref": _JSON_REF.format("ColumnarBatch")},
                ]
            },
            "examples": {
                "rows": {"summary": "Row JSON", "value": examples.ROW_BATCH},
                "columns": {"summary": "Columnar JSON", "value": examples.COLUMNAR_BATCH},
            },
        },
        "text/csv": {
            "schema": {
                "type": "string",
                "description": "A header naming the columns (id, timestamp, score and "
                "optionally label, segment, labelled_at, source, amount and entity), then one "
                "line per prediction; an empty label is unknown, an empty segment 'all', an "
                "empty labelled_at, source, amount or entity not sent. UTF-8 with or without "
                "a byte-order mark; fields separated by commas, semicolons or tabs (the "
                "header line tells which); decimals with a point; a timestamp written as a "
                "number is Unix seconds.",
            },
            "example": examples.CSV_BATCH,
        },
    },
}
LABELS_BODY: Final[dict[str, Any]] = {
    "required": True,
    "description": "JSON, or CSV with the columns id and label and optionally labelled_at "
    "and source (Content-Type: text/csv), as a chargeback feed is exported.",
    "content": {
        "application/json": {
            "schema": {
                "oneOf": [
                    {"$ref": _JSON_REF.format("LabelUpdate")},
                    {"type": "array", "items": {"$ref": _JSON_REF.format("LabelEntry")}},
                ]
            },
            "example": examples.LABELS_JSON,
        },
        "text/csv": {
            "schema": {
                "type": "string",
                "description": "Header id,label[,labelled_at][,source]; labels 0 or 1.",
            },
            "example": examples.LABELS_CSV,
        },
    },
}


def ingest_responses(*, unsupported: str, invalid: str) -> dict[int | str, dict[str, Any]]:
    """The answers both ingest routes give for the same reasons (a body past the limits, one
    they cannot read, rows refused, no room), each route's words for what it reads."""
    return {
        413: {"description": TOO_LARGE},
        415: {"description": unsupported},
        422: {"description": invalid},
        503: {"description": UNAVAILABLE},
    }
