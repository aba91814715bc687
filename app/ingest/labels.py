"""Label-only updates, as JSON ``{"labels": [{"id": "tx-1", "label": 1}, ...]}`` (or the bare
array) or as CSV with the columns ``id`` and ``label`` (a chargeback feed as exported)."""

from __future__ import annotations

from typing import Final

from app.ingest.body import Media
from app.ingest.errors import BATCH_LEVEL, LabelsValidationError, RowError
from app.ingest.json_body import InvalidJsonError, load_json
from app.ingest.parse import read_csv, too_many_rows
from app.ingest.validate import MAX_ID_LENGTH, Problems
from app.input_rules import NUL_MESSAGE, contains_nul

LABEL_COLUMNS: Final = ("id", "label")
_LABEL_RULE: Final = "must be 0 or 1 (a label update cannot make a label unknown)"
_ID_RULE: Final = f"must be a string of 1 to {MAX_ID_LENGTH} chars"
# What a spreadsheet or pandas writes for 0 and 1.
_CSV_LABELS: Final[dict[str, int]] = {"0": 0, "1": 1, "0.0": 0, "1.0": 1}


def parse_labels(
    body: bytes | bytearray, media: Media = "json", max_rows: int | None = None
) -> list[tuple[str, int]]:
    """The (id, label) pairs of a label update; LabelsValidationError names each bad entry.

    A label here is 0 or 1: a label update that says "unknown" would erase information. More
    than ``max_rows`` entries is a 413 before any is checked (a CSV's before the lines past the
    limit are read).
    """
    entries = _csv_entries(body, max_rows) if media == "csv" else _json_entries(body)
    if max_rows is not None and len(entries) > max_rows:
        raise too_many_rows(max_rows, f"the label update has {len(entries)} entries")
    problems = Problems()  # counts every problem, keeps the first: not one object per entry
    pairs: list[tuple[str, int]] = []
    first_seen: dict[str, int] = {}
    for row, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != set(LABEL_COLUMNS):
            problems.add(RowError(row, "row", 'must be an object with exactly "id" and "label"'))
            continue
        prediction_id, label = entry["id"], entry["label"]
        if not isinstance(prediction_id, str) or not 0 < len(prediction_id) <= MAX_ID_LENGTH:
            problems.add(RowError(row, "id", _ID_RULE))
        elif contains_nul(prediction_id):
            problems.add(RowError(row, "id", NUL_MESSAGE))
        elif prediction_id in first_seen:
            problems.add(RowError(row, "id", f"duplicate of row {first_seen[prediction_id]}"))
        else:
            first_seen[prediction_id] = row
        if isinstance(label, bool) or label not in (0, 1):
            problems.add(RowError(row, "label", _LABEL_RULE))
        if not problems.total:
            pairs.append((prediction_id, int(label)))
    if problems.total:
        raise LabelsValidationError(problems.reported, problems.total)
    return pairs


def _json_entries(body: bytes | bytearray) -> list[object]:
    try:
        document = load_json(body, "labels")
    except InvalidJsonError as error:
        if error.non_finite:
            raise LabelsValidationError(error.non_finite) from None
        hint = " (a CSV feed needs Content-Type: text/csv)" if _looks_like_csv(body) else ""
        raise _body_error(f"not valid JSON: {error.reason}{hint}") from None
    entries = document.get("labels") if isinstance(document, dict) else document
    if not isinstance(entries, list) or not entries:
        raise _body_error('expected {"labels": [{"id": ..., "label": 0 or 1}, ...]}, non-empty')
    return entries


def _csv_entries(body: bytes | bytearray, max_rows: int | None) -> list[object]:
    """The data lines as {"id", "label"} entries (row 0 is the first line after the header)."""
    table = read_csv(body, LabelsValidationError, max_rows)
    header = table.header
    for name in header:
        if name not in LABEL_COLUMNS:
            raise _body_error(f"unknown column {name!r}; a label CSV has the columns id, label")
    for name in LABEL_COLUMNS:
        if header.count(name) != 1:
            raise _body_error(f"the header must name the column {name!r} once (id, label)")
    if table.wrong_width_count:
        raise LabelsValidationError(table.wrong_width, table.wrong_width_count)
    id_at, label_at = header.index("id"), header.index("label")
    entries: list[object] = []
    for record in table.records:
        text = record[label_at].strip()
        entries.append({"id": record[id_at], "label": _CSV_LABELS.get(text, text)})
    if not entries:
        raise _body_error("the CSV has a header but no label lines")
    return entries


def _looks_like_csv(body: bytes | bytearray) -> bool:
    first_line = bytes(body[:200]).split(b"\n", 1)[0].lower()
    return b"id" in first_line and b"," in first_line and not first_line.lstrip().startswith(b"{")


def _body_error(message: str) -> LabelsValidationError:
    return LabelsValidationError([RowError(BATCH_LEVEL, "labels", message)])
