"""Reading a prediction or label file (CSV, JSON lines, Parquet) as chunks for the client.

A file's columns are named as the API's: a prediction file has ``id``, ``timestamp``, ``score``
and optionally ``label``, ``segment``, ``labelled_at``, ``source``, ``amount``, ``entity``; a
label file (no
``timestamp`` and no ``score``) has ``id``, ``label`` and optionally ``labelled_at``, ``source``,
and goes to the label endpoint (a chargeback export as it is). Values are converted only as far
as JSON needs (a CSV score is text); checking them is the server's job, which names the row and
field of every bad value. A CSV is read by the API's rules (app.ingest.csv_text): a
byte-order mark, a comma, semicolon or tab separator, and timestamps written as numbers
(Unix seconds) are taken as the API takes them.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal

import numpy as np

from app.client import file_kinds, json_arrays
from app.client.columns import (
    Chunk,
    Column,
    amount_column,
    label_time_column,
    split,
    timestamp_column,
)
from app.client.file_kinds import FeedKind, FileFormatError, check_names, feed_kind
from app.client.json_lines import jsonl_chunks
from app.ingest.csv_text import header_names, separator_of, timestamp_field, timestamp_fields

__all__ = ["FeedKind", "FileFormat", "FileFormatError", "PredictionFile", "feed_kind"]

FileFormat = Literal["csv", "jsonl", "parquet"]
SUFFIXES: dict[str, FileFormat] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


@dataclass(frozen=True)
class PredictionFile:
    """A file to import: where it is, its format, how many data rows it holds and whether it
    holds predictions or labels only."""

    path: Path
    format: FileFormat
    rows: int
    kind: FeedKind = "predictions"

    @classmethod
    def open(cls, path: Path, file_format: FileFormat | None = None) -> PredictionFile:
        """Detect the format (from the suffix unless given) and the kind, and count the rows."""
        resolved = file_format or SUFFIXES.get(path.suffix.lower())
        if resolved is None:
            raise FileFormatError(
                f"{path}: cannot tell the format from {path.suffix!r}; pass --format "
                "csv, jsonl or parquet"
            )
        if resolved == "parquet":
            parquet = _parquet(path)
            rows = parquet.metadata.num_rows
            kind = feed_kind(list(parquet.schema_arrow.names))
        else:
            lines = _count_lines(path)
            rows = lines - 1 if resolved == "csv" and lines else lines
            kind = feed_kind(_first_names(path, resolved))
        return cls(path, resolved, rows, kind)

    def chunks(self, batch_rows: int) -> Iterator[Chunk]:
        """The file's rows in order, ``batch_rows`` at a time."""
        if self.format == "csv":
            return _csv_chunks(self.path, batch_rows)
        if self.format == "jsonl":
            return jsonl_chunks(self.path, batch_rows, self.kind)
        return _parquet_chunks(self.path, batch_rows)


def _first_names(path: Path, file_format: FileFormat) -> list[str]:
    """The CSV header's names, or the keys of the first JSON line ([] if unreadable: the
    chunks report it, naming the line)."""
    with path.open("rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            if file_format == "csv":
                return _csv_header(line.decode("utf-8-sig", "replace"))[1]
            try:
                record = json_arrays.loads(line)
            except json_arrays.DecodeError:
                return []
            return list(record) if isinstance(record, dict) else []
    return []


def _csv_header(line: str) -> tuple[str, list[str]]:
    """A CSV header line's separator and its column names (app.ingest.csv_text's rules)."""
    separator = separator_of(line)
    return separator, header_names(next(csv.reader([line], delimiter=separator), []))


def _count_lines(path: Path) -> int:
    """Non-empty lines, counted in 1 MiB blocks (about a second per gigabyte)."""
    count = 0
    last = b"\n"
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _csv_chunks(path: Path, batch_rows: int) -> Iterator[Chunk]:
    """Chunks of exactly ``batch_rows`` rows (the last one shorter), whichever reader is used:
    the batch ids depend on it, and a restarted import must cut the file the same way."""
    try:
        import pyarrow  # noqa: F401, PLC0415 - optional extra
    except ImportError:
        return _csv_module_chunks(path, batch_rows)
    return _arrow_csv_chunks(path, batch_rows)


def _csv_module_chunks(path: Path, batch_rows: int) -> Iterator[Chunk]:
    columns: dict[str, list[Any]] = {}
    first = 0
    for block in _csv_module_blocks(path):
        converted = {name: _CSV_COLUMNS[name](values) for name, values in block.items()}
        columns = {name: columns.get(name, []) + values for name, values in converted.items()}
        while len(columns["id"]) >= batch_rows:
            yield Chunk(first, {name: values[:batch_rows] for name, values in columns.items()})
            columns = {name: values[batch_rows:] for name, values in columns.items()}
            first += batch_rows
    if columns and columns["id"]:
        yield Chunk(first, dict(columns))


def _arrow_csv_chunks(path: Path, batch_rows: int) -> Iterator[Chunk]:
    """pyarrow's C++ reader, every column read as text (so that a bad value reaches the server,
    which names its row and field), then converted a column at a time in C++, batches cut as
    zero-copy slices: 100 ms of CPU per 200,000 rows here, encoding included, against 580 ms
    with the csv module (CPU the client takes from the server when both share the cores)."""
    import pyarrow as pa  # noqa: PLC0415 - optional extra
    import pyarrow.csv as pcsv  # noqa: PLC0415

    with path.open("rb") as handle:
        line = handle.readline().decode("utf-8-sig")  # pyarrow skips the BOM too
    separator, names = _csv_header(line)
    check_names(names, f"{path}: header line")
    # pyarrow names the columns as written (BOM aside): the text types are keyed so.
    written = next(csv.reader([line], delimiter=separator), [])
    options = pcsv.ConvertOptions(
        column_types=dict.fromkeys(written, pa.string()),
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    first = 0
    try:
        reader = pcsv.open_csv(
            path,
            read_options=pcsv.ReadOptions(block_size=file_kinds.BLOCK_BYTES),
            parse_options=pcsv.ParseOptions(delimiter=separator),
            convert_options=options,
        )
        for table in file_kinds.arrow_batches(reader, batch_rows, reader.schema):
            yield Chunk(first, _arrow_columns(table, names))
            first += table.num_rows
    except pa.ArrowInvalid as error:
        raise FileFormatError(f"{path}: {error}") from None


def _arrow_columns(table: Any, names: list[str]) -> dict[str, Column]:
    """A table of text columns as the client sends them (as ``_CSV_COLUMNS`` converts)."""
    import pyarrow as pa  # noqa: PLC0415 - optional extra

    columns: dict[str, Column] = {}
    for index, name in enumerate(names):
        text = table.column(index)
        # A column of numbers in C++ (timestamps as Unix seconds); ISO timestamps are told by
        # their first value, since a failing cast costs as much as a whole successful one.
        if name == "score" or (name == "timestamp" and _unix_seconds(text[0].as_py())):
            try:
                columns[name] = text.cast(pa.float64()).to_numpy()
                continue
            except pa.ArrowInvalid:  # ISO timestamps, or a bad score the server will name
                pass
        if name == "amount":  # every field a finite number: one array (else value by value)
            try:
                numbers = text.cast(pa.float64()).to_numpy()
            except pa.ArrowInvalid:  # an empty field (none sent), or text the server will name
                pass
            else:
                if np.isfinite(numbers).all():
                    columns[name] = numbers
                    continue
        columns[name] = _CSV_COLUMNS[name](text.to_pylist())
    return columns


def _unix_seconds(field: str) -> bool:
    return isinstance(timestamp_field(field), float)


def _csv_module_blocks(path: Path) -> Iterator[dict[str, list[str]]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        separator, header = _csv_header(handle.readline())
        reader = csv.reader(handle, delimiter=separator)
        check_names(header, f"{path}: header line")
        line = 2
        while rows := list(islice(reader, 50_000)):
            if set(map(len, rows)) != {len(header)}:
                bad = next(i for i, row in enumerate(rows) if len(row) != len(header))
                raise FileFormatError(
                    f"{path}: line {line + bad} has {len(rows[bad])} fields, "
                    f"the header {len(header)}"
                )
            yield {
                name: list(values)
                for name, values in zip(header, zip(*rows, strict=True), strict=True)
            }
            line += len(rows)


def _csv_numbers(values: list[str]) -> list[Any]:
    try:
        numbers: list[Any] = np.array(values, dtype=np.float64).tolist()
    except ValueError:
        # Some value is not a number: send the others as numbers and that one as text, which
        # the server refuses naming its row and field.
        return [_csv_number(value) for value in values]
    return numbers


def _csv_number(value: str) -> Any:
    try:
        return float(value)
    except ValueError:
        return value


def _csv_amounts(values: list[str]) -> list[Any]:
    """Finite numbers as numbers, an empty field as null (none sent); anything else (NaN, an
    infinity, text) as it is written, for the server to refuse naming its row."""
    try:
        numbers = np.array(values, dtype=np.float64)
    except ValueError:
        return [_csv_amount(value) for value in values]
    if np.isfinite(numbers).all():
        listed: list[Any] = numbers.tolist()
        return listed
    return [_csv_amount(value) for value in values]


def _csv_amount(value: str) -> Any:
    if not value.strip():
        return None
    try:
        number = float(value)
    except ValueError:
        return value
    return number if math.isfinite(number) else value


_LABELS: dict[str, int | None] = {"": None, "0": 0, "1": 1}

_CSV_COLUMNS: dict[str, Callable[[list[str]], list[Any]]] = {
    "id": lambda values: values,
    # A field written as a number is Unix seconds, other text ISO 8601 (the API's CSV rule).
    "timestamp": timestamp_fields,
    "score": _csv_numbers,
    "label": lambda values: [_LABELS.get(value, value) for value in values],
    "segment": lambda values: [value or None for value in values],
    "labelled_at": lambda values: [value or None for value in values],
    "source": lambda values: [value or None for value in values],
    "amount": _csv_amounts,
    "entity": lambda values: [value or None for value in values],
}


def _parquet(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 - optional extra
    except ImportError:
        raise FileFormatError(
            "reading Parquet needs pyarrow: pip install 'calmon[parquet]'"
        ) from None
    return pq.ParquetFile(path)


def _parquet_chunks(path: Path, batch_rows: int) -> Iterator[Chunk]:
    import pyarrow as pa  # noqa: PLC0415 - optional extra

    parquet = _parquet(path)
    names = list(parquet.schema_arrow.names)
    check_names(names, str(path))
    first = 0
    for record_batch in parquet.iter_batches(batch_size=batch_rows):
        columns: dict[str, Column] = {}
        for name in names:
            column = record_batch.column(name)
            if name == "score" and pa.types.is_floating(column.type) and not column.null_count:
                columns[name] = column.to_numpy()  # written whole, not value by value
                continue
            if name in ("timestamp", "labelled_at") and pa.types.is_timestamp(column.type):
                # Without a time zone: UTC, the client's one rule (columns.timestamp_column).
                zone = "UTC" if column.type.tz is not None else None
                utc = column.cast(pa.timestamp("us", zone)).to_numpy(zero_copy_only=False)
                instants = np.asarray(utc).astype("datetime64[us]")
                convert = timestamp_column if name == "timestamp" else label_time_column
                columns[name] = convert(instants)
            elif name == "amount":  # a null or NaN is none sent; a float array when none is
                columns[name] = amount_column(column.to_numpy(zero_copy_only=False))
            else:
                columns[name] = column.to_pylist()
        yield from split(columns, batch_rows, first)
        first += record_batch.num_rows
