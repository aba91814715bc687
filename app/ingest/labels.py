"""Label-only updates: ``{"labels": [{"id": "tx-1", "label": 1}, ...]}`` (or the bare array)."""

from __future__ import annotations

import orjson

from app.ingest.errors import BATCH_LEVEL, BatchValidationError, RowError
from app.ingest.validate import MAX_ID_LENGTH
from app.input_rules import NUL_MESSAGE, contains_nul


def parse_labels(body: bytes | bytearray) -> list[tuple[str, int]]:
    """The (id, label) pairs of a label update; BatchValidationError names each bad entry.

    A label here is 0 or 1: a label update that says "unknown" would erase information.
    """
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise _body_error(f"not valid JSON: {error}") from None
    entries = document.get("labels") if isinstance(document, dict) else document
    if not isinstance(entries, list) or not entries:
        raise _body_error('expected {"labels": [{"id": ..., "label": 0 or 1}, ...]}, non-empty')
    errors: list[RowError] = []
    pairs: list[tuple[str, int]] = []
    first_seen: dict[str, int] = {}
    for row, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"id", "label"}:
            errors.append(RowError(row, "row", 'must be an object with exactly "id" and "label"'))
            continue
        prediction_id, label = entry["id"], entry["label"]
        if not isinstance(prediction_id, str) or not 0 < len(prediction_id) <= MAX_ID_LENGTH:
            errors.append(RowError(row, "id", f"must be a string of 1 to {MAX_ID_LENGTH} chars"))
        elif contains_nul(prediction_id):
            errors.append(RowError(row, "id", NUL_MESSAGE))
        elif prediction_id in first_seen:
            errors.append(RowError(row, "id", f"duplicate of row {first_seen[prediction_id]}"))
        else:
            first_seen[prediction_id] = row
        if isinstance(label, bool) or label not in (0, 1):
            errors.append(RowError(row, "label", "must be 0 or 1"))
        if not errors:
            pairs.append((prediction_id, int(label)))
    if errors:
        raise BatchValidationError(errors)
    return pairs


def _body_error(message: str) -> BatchValidationError:
    return BatchValidationError([RowError(BATCH_LEVEL, "labels", message)])
