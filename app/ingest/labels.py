"""Label-only updates, as JSON ``{"labels": [{"id": "tx-1", "label": 1}, ...]}`` (or the bare
array) or as CSV with the columns ``id`` and ``label`` (a chargeback feed as exported), each
entry optionally with ``labelled_at`` (when the label arrived) and ``source`` (feedback,
chargeback or confirmed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from app.ingest.body import Media
from app.ingest.errors import BATCH_LEVEL, LabelsValidationError, Problems, RowError
from app.ingest.json_body import InvalidJsonError, load_json
from app.ingest.label_times import LABELLED_AT, SOURCE, label_sources, label_times
from app.ingest.parse import read_csv, too_many_rows
from app.ingest.validate import MAX_ID_LENGTH
from app.input_rules import NUL_MESSAGE, contains_nul

LABEL_COLUMNS: Final = ("id", "label")
OPTIONAL_COLUMNS: Final = (LABELLED_AT, SOURCE)
_ALL_COLUMNS: Final = frozenset((*LABEL_COLUMNS, *OPTIONAL_COLUMNS))
_ENTRY_RULE: Final = (
    'must be an object with "id" and "label" (and optionally "labelled_at", "source")'
)
_LABEL_RULE: Final = "must be 0 or 1 (a label update cannot make a label unknown)"
_ID_RULE: Final = f"must be a string of 1 to {MAX_ID_LENGTH} chars"
# What a spreadsheet or pandas writes for 0 and 1.
_CSV_LABELS: Final[dict[str, int]] = {"0": 0, "1": 1, "0.0": 0, "1.0": 1}


@dataclass(frozen=True)
class LabelUpdates:
    """A label update's entries, in the order sent (errors name them by that index)."""

    ids: list[str]
    labels: npt.NDArray[np.int8]  # 0 or 1
    labelled_at: npt.NDArray[np.int64]  # UTC epoch microseconds; UNKNOWN_LABEL_TIME: none sent
    sources: npt.NDArray[np.int8]  # LABEL_SOURCE_CODES; UNKNOWN_LABEL_SOURCE: none sent

    def __len__(self) -> int:
        return len(self.ids)


def parse_labels(
    body: bytes | bytearray,
    media: Media = "json",
    max_rows: int | None = None,
    latest: int | None = None,
) -> LabelUpdates:
    """The entries of a label update; LabelsValidationError names each bad entry.

    A label here is 0 or 1: a label update that says "unknown" would erase information.
    ``labelled_at`` later than ``latest`` (epoch microseconds: now + CALMON_MAX_FUTURE) is
    refused; whether it precedes its prediction's timestamp is for the database to say (the
    rows are there). More than ``max_rows`` entries is a 413 before any is checked (a CSV's
    before the lines past the limit are read).
    """
    entries = _csv_entries(body, max_rows) if media == "csv" else _json_entries(body)
    if max_rows is not None and len(entries) > max_rows:
        raise too_many_rows(max_rows, f"the label update has {len(entries)} entries")
    problems = Problems()  # counts every problem, keeps the first: not one object per entry
    ids: list[str] = []
    labels: list[int] = []
    times: list[object] = []
    sources: list[object] = []
    first_seen: dict[str, int] = {}
    for row, sent in enumerate(entries):
        entry = sent if isinstance(sent, dict) else {}
        if not set(LABEL_COLUMNS) <= entry.keys() <= _ALL_COLUMNS:
            problems.add(RowError(row, "row", _ENTRY_RULE))
            entry = {}
        prediction_id, label = entry.get("id", ""), entry.get("label", 0)
        if not entry:
            pass
        elif not isinstance(prediction_id, str) or not 0 < len(prediction_id) <= MAX_ID_LENGTH:
            problems.add(RowError(row, "id", _ID_RULE))
        elif contains_nul(prediction_id):
            problems.add(RowError(row, "id", NUL_MESSAGE))
        elif prediction_id in first_seen:
            problems.add(RowError(row, "id", f"duplicate of row {first_seen[prediction_id]}"))
        else:
            first_seen[prediction_id] = row
        if isinstance(label, bool) or label not in (0, 1):
            problems.add(RowError(row, "label", _LABEL_RULE))
        ids.append(prediction_id if isinstance(prediction_id, str) else "")
        labels.append(int(label) if label in (0, 1) else 0)
        times.append(entry.get(LABELLED_AT))
        sources.append(entry.get(SOURCE))
    bound = np.iinfo(np.int64).max if latest is None else latest
    labelled_at = label_times(times, bound, problems)
    codes = label_sources(sources, problems)
    if problems.total:
        raise LabelsValidationError(problems.reported, problems.total)
    return LabelUpdates(ids, np.array(labels, dtype=np.int8), labelled_at, codes)


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
    """The data lines as entries (row 0 is the first line after the header); an empty
    labelled_at or source is none sent."""
    table = read_csv(body, LabelsValidationError, max_rows)
    header = table.header
    for name in header:
        if name not in _ALL_COLUMNS:
            raise _body_error(
                f"unknown column {name!r}; a label CSV has the columns id, label "
                "and optionally labelled_at, source"
            )
    for name in _ALL_COLUMNS:
        if header.count(name) > 1 or (name in LABEL_COLUMNS and name not in header):
            raise _body_error(f"the header must name the column {name!r} once (id, label)")
    if table.wrong_width_count:
        raise LabelsValidationError(table.wrong_width, table.wrong_width_count)
    at = {name: header.index(name) for name in header}
    entries: list[object] = []
    for record in table.records:
        text = record[at["label"]].strip()
        entry: dict[str, object] = {"id": record[at["id"]], "label": _CSV_LABELS.get(text, text)}
        for name in OPTIONAL_COLUMNS:
            if name in at:
                entry[name] = record[at[name]].strip() or None
        entries.append(entry)
    if not entries:
        raise _body_error("the CSV has a header but no label lines")
    return entries


def _looks_like_csv(body: bytes | bytearray) -> bool:
    first_line = bytes(body[:200]).split(b"\n", 1)[0].lower()
    return b"id" in first_line and b"," in first_line and not first_line.lstrip().startswith(b"{")


def _body_error(message: str) -> LabelsValidationError:
    return LabelsValidationError([RowError(BATCH_LEVEL, "labels", message)])
