"""Batch bodies (row JSON, columnar JSON, CSV) turned into one columnar shape.

Every format becomes a ``RawBatch``: five equally long Python lists (``id``, ``timestamp``,
``score``, ``label``, ``segment``), and ``labelled_at``, ``source``, ``amount`` and ``entity``
when the batch sends them, whose values are not checked yet; ``app.ingest.validate`` checks
them column by column.
Problems of shape (a row that is not an object, a missing or unknown field, columns of
different lengths) are reported here and stop the batch before any value is looked at: a
shape problem usually means every row is wrong the same way.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any, Final

import msgspec

from app.cycle_collector import collector_paused
from app.errors import PayloadTooLargeError, PayloadValidationError
from app.ingest.csv_text import header_names, separator_of, timestamp_fields
from app.ingest.errors import BATCH_LEVEL, MAX_REPORTED_ERRORS, BatchValidationError, RowError
from app.ingest.json_body import InvalidJsonError, load_json, load_rows, rows_decoder
from app.ingest.label_times import LABELLED_AT, SOURCE
from app.ingest.row_fields import AMOUNT, ENTITY

FIELDS: Final = (
    "id",
    "timestamp",
    "score",
    "label",
    "segment",
    "labelled_at",
    "source",
    "amount",
    "entity",
)
REQUIRED: Final = ("id", "timestamp", "score")
OPTIONAL_FIELDS: Final = ("labelled_at", "source", "amount", "entity")
"""A label's time and source, a transaction's amount and entity: a column of them exists only
if the batch sends one, so that a batch without them costs nothing more (and hashes as before
they existed)."""
_ROWS: Final = rows_decoder(FIELDS, REQUIRED)
# pandas writes an integer column with gaps as floats: 1.0, 0.0 and an empty field.
_CSV_LABELS: Final[dict[str, int | None]] = {"": None, "0": 0, "1": 1, "0.0": 0, "1.0": 1}


@dataclass(frozen=True)
class RawBatch:
    """A batch's client id and its unvalidated columns (each of length ``rows``; the
    OPTIONAL_FIELDS only when sent)."""

    batch_id: object
    columns: dict[str, list[object]]

    @property
    def rows(self) -> int:
        """Number of rows in the batch."""
        return len(self.columns["id"])


def parse_json(body: bytes | bytearray, batch_id: str | None = None) -> RawBatch:
    """Parse ``{"batch_id", "rows": [...]}`` or ``{"batch_id", "columns": {...}}``.

    ``batch_id`` (from a header or query parameter) is used when the body carries none.
    """
    rows_body = load_rows(body, _ROWS)
    if rows_body is not None:  # well-formed rows; anything else is parsed and checked below
        return RawBatch(
            _resolve_batch_id(rows_body.batch_id, batch_id),
            _columns_from_row_objects(rows_body.rows),
        )
    try:
        document = load_json(body, "rows")
    except InvalidJsonError as error:
        if error.non_finite:
            raise BatchValidationError(error.non_finite) from None
        raise _shape_error("body", f"not valid JSON: {error.reason}") from None
    if not isinstance(document, dict):
        raise _shape_error("body", 'expected an object {"batch_id": ..., "rows": [...]}')
    unknown = set(document) - {"batch_id", "rows", "columns"}
    if unknown:
        raise _shape_error(sorted(unknown)[0], "unknown field; expected batch_id, rows or columns")
    resolved_id = _resolve_batch_id(document.get("batch_id"), batch_id)
    if ("rows" in document) == ("columns" in document):
        raise _shape_error("rows", 'send exactly one of "rows" (objects) or "columns" (arrays)')
    if "rows" in document:
        return RawBatch(resolved_id, _columns_from_rows(document["rows"]))
    return RawBatch(resolved_id, _columns_from_columns(document["columns"]))


def parse_csv(
    body: bytes | bytearray, batch_id: str | None, max_rows: int | None = None
) -> RawBatch:
    """Parse a CSV upload: a header naming the columns, then one line per row.

    Empty ``label`` means unknown, empty ``segment`` means ``all``, an empty ``labelled_at``,
    ``source``, ``amount`` or ``entity`` none sent; a timestamp written as a number is Unix
    seconds (app.ingest.csv_text: the rules of a CSV's text). Row indexes in errors count
    data lines from 0 (the header is not a row). More than ``max_rows`` lines is a 413 as soon
    as the line after the last allowed one is read.
    """
    # A record is a list: 50,000 of them alive at once set off collection after collection of
    # the oldest generation, 40-55% of the parse (app.cycle_collector).
    with collector_paused():
        return _parse_csv_table(body, batch_id, max_rows)


def _parse_csv_table(
    body: bytes | bytearray, batch_id: str | None, max_rows: int | None
) -> RawBatch:
    table = read_csv(body, BatchValidationError, max_rows)
    header = table.header
    _check_names(header, "column")
    if table.wrong_width_count:
        raise BatchValidationError(table.wrong_width, table.wrong_width_count)
    data = table.records
    n = len(data)
    transposed = zip(*data, strict=True) if n else ([] for _ in header)
    by_name = dict(zip(header, (list(column) for column in transposed), strict=True))
    columns: dict[str, list[object]] = {
        "id": list(by_name["id"]) if n else [],
        "timestamp": timestamp_fields(by_name["timestamp"]) if n else [],
        "score": _csv_floats(by_name["score"]) if n else [],
        "label": [_CSV_LABELS.get(v.strip(), v) for v in by_name["label"]]
        if "label" in by_name
        else [None] * n,
        "segment": [v or None for v in by_name["segment"]] if "segment" in by_name else [None] * n,
    }
    for name in (LABELLED_AT, SOURCE):
        if name in by_name:
            columns[name] = [v.strip() or None for v in by_name[name]]
    if AMOUNT in by_name:
        columns[AMOUNT] = _csv_optional_floats(by_name[AMOUNT])
    if ENTITY in by_name:
        columns[ENTITY] = [v or None for v in by_name[ENTITY]]
    return RawBatch(_resolve_batch_id(None, batch_id), columns)


def too_many_rows(max_rows: int, what: str) -> PayloadTooLargeError:
    """The 413 of a body with more rows than one request may carry, found while parsing."""
    return PayloadTooLargeError(
        f"{what}; at most {max_rows} per request (CALMON_MAX_ROWS_PER_REQUEST): "
        "split it into several batches",
        extra={"max_rows": max_rows},
    )


def _lines(body: bytes | bytearray) -> Iterator[str]:
    """The body's lines, each decoded only when the csv module asks for it, so the whole text
    is never held beside the body. Cutting at b"\n" is safe in UTF-8 (no multi-byte character
    contains that byte); a quoted field spanning lines is joined by the csv module."""
    start = 0
    encoding = "utf-8-sig"  # the first line may start with a byte-order mark
    end = body.find(b"\n")
    while end >= 0:
        yield body[start : end + 1].decode(encoding)
        encoding = "utf-8"
        start = end + 1
        end = body.find(b"\n", start)
    if start < len(body):
        yield body[start:].decode(encoding)


def _records(body: bytes | bytearray) -> Iterator[list[str]]:
    """The body's records, split at the separator its first non-blank line (the header) uses."""
    lines = _lines(body)
    for line in lines:
        if line.strip():
            yield from csv.reader(chain([line], lines), delimiter=separator_of(line))
            return


@dataclass(frozen=True)
class CsvTable:
    """A CSV body's header (its names as app.ingest.csv_text.header_names gives them) and its
    lines of as many fields as the header.

    Lines of another width are only counted and the first ones named: a body of short lines
    with many fields each must not cost more than the rows it may hold.
    """

    header: list[str]
    records: list[list[str]]
    wrong_width: list[RowError]
    wrong_width_count: int


def read_csv(
    body: bytes | bytearray,
    refusal: Callable[[list[RowError]], PayloadValidationError],
    max_rows: int | None = None,
) -> CsvTable:
    """The non-empty records of a CSV body, separated by commas, semicolons or tabs as its
    header line is (app.ingest.csv_text); a body that is not UTF-8, has no header or holds a
    record the csv module cannot read is ``refusal`` (a 422), one of more than ``max_rows``
    lines a PayloadTooLargeError (413), raised before the lines past the limit are read."""
    header: list[str] | None = None
    records: list[list[str]] = []
    wrong_width: list[RowError] = []
    wrong_width_count = 0
    row = -1  # data lines are counted from 0, the header is not one
    try:
        for record in _records(body):
            if not record:
                continue
            if header is None:
                header = header_names(record)
                continue
            row += 1
            if max_rows is not None and row == max_rows:
                raise too_many_rows(max_rows, f"the CSV has more than {max_rows} lines")
            if len(record) == len(header):
                records.append(record)
                continue
            wrong_width_count += 1
            if wrong_width_count <= MAX_REPORTED_ERRORS:
                message = f"has {len(record)} fields, the header has {len(header)}"
                wrong_width.append(RowError(row, "row", message))
    except UnicodeDecodeError as error:
        raise refusal([RowError(BATCH_LEVEL, "body", f"CSV must be UTF-8: {error}")]) from None
    except csv.Error as error:
        # Counted like data rows: the record after the last one read.
        at = BATCH_LEVEL if header is None else row + 1
        raise refusal([RowError(at, "row", f"unreadable CSV: {error}")]) from None
    if header is None:
        raise refusal([RowError(BATCH_LEVEL, "body", "CSV has no header line")])
    return CsvTable(header, records, wrong_width, wrong_width_count)


def _csv_floats(values: list[str]) -> list[object]:
    """Floats where the text is a number; the text itself otherwise (validation names it)."""
    try:
        return list(map(float, values))
    except ValueError:
        converted: list[object] = []
        for value in values:
            try:
                converted.append(float(value))
            except ValueError:
                converted.append(value)
        return converted


def _csv_optional_floats(values: list[str]) -> list[object]:
    """:func:`_csv_floats`, with None where a field is empty (or blank): none sent."""
    try:
        return list(map(float, values))
    except ValueError:
        return [None if not value.strip() else _csv_floats([value])[0] for value in values]


def _columns_from_row_objects(rows: list[Any]) -> dict[str, list[object]]:
    """The columns of rows decoded by ``_ROWS``: the same as :func:`_columns_from_rows`
    gives for the same rows read as dicts (a field no row sends is absent or None alike)."""
    columns: dict[str, list[object]] = {}
    for name in FIELDS:
        values = list(map(attrgetter(name), rows))  # one C-level pass
        unset = values.count(msgspec.UNSET)
        if unset == len(values) and name in OPTIONAL_FIELDS:
            continue
        if unset:
            values = [None if value is msgspec.UNSET else value for value in values]
        columns[name] = values
    return columns


def _columns_from_rows(rows: object) -> dict[str, list[object]]:
    if not isinstance(rows, list):
        raise _shape_error("rows", "must be an array of objects")
    # Fast path: every row an object with known keys; one C-level pass per column.
    if set(map(type, rows)) <= {dict} and (keys := set().union(*rows)) <= set(FIELDS):
        try:
            columns = {
                "id": [row["id"] for row in rows],
                "timestamp": [row["timestamp"] for row in rows],
                "score": [row["score"] for row in rows],
                "label": [row.get("label") for row in rows],
                "segment": [row.get("segment") for row in rows],
            }
        except KeyError:
            pass
        else:
            for name in OPTIONAL_FIELDS:
                if name in keys:
                    columns[name] = [row.get(name) for row in rows]
            return columns
    errors: list[RowError] = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            errors.append(RowError(index, "row", "must be an object"))
            continue
        errors.extend(RowError(index, name, "is required") for name in REQUIRED if name not in row)
        errors.extend(
            RowError(index, str(name), f"unknown field; expected one of {', '.join(FIELDS)}")
            for name in row
            if name not in FIELDS
        )
    raise BatchValidationError(errors)


def _columns_from_columns(columns: object) -> dict[str, list[object]]:
    if not isinstance(columns, dict):
        raise _shape_error("columns", "must be an object of arrays")
    _check_names(list(columns), "column")
    lengths = {name: len(values) for name, values in columns.items() if isinstance(values, list)}
    not_lists = [name for name in columns if name not in lengths]
    if not_lists:
        raise _shape_error(f"columns.{not_lists[0]}", "must be an array")
    if len(set(lengths.values())) > 1:
        raise _shape_error("columns", f"columns have different lengths: {lengths}")
    n = lengths["id"]
    required = [name for name in FIELDS if name not in OPTIONAL_FIELDS]
    sent = [name for name in OPTIONAL_FIELDS if name in columns]
    return {name: columns.get(name, [None] * n) for name in [*required, *sent]}


def _check_names(names: list[str], kind: str) -> None:
    unknown = [name for name in names if name not in FIELDS]
    if unknown:
        raise _shape_error(unknown[0], f"unknown {kind}; expected {', '.join(FIELDS)}")
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise _shape_error(duplicated[0], f"{kind} appears more than once")
    missing = [name for name in REQUIRED if name not in names]
    if missing:
        raise _shape_error(missing[0], f"{kind} is required")


def _resolve_batch_id(in_body: object, outside: str | None) -> object:
    if in_body is not None and outside is not None and in_body != outside:
        raise _shape_error("batch_id", "differs between the body and the header/query parameter")
    if in_body is None and outside is None:
        raise _shape_error("batch_id", "is required (in the body, X-Batch-Id or ?batch_id=)")
    return in_body if in_body is not None else outside


def _shape_error(field: str, message: str) -> BatchValidationError:
    return BatchValidationError([RowError(BATCH_LEVEL, field, message)])
