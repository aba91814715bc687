"""Reading a prediction file (CSV, JSON lines, Parquet) as chunks for the client.

A file's columns are named as the API's (``id``, ``timestamp``, ``score`` and optionally
``label``, ``segment``). Values are converted only as far as JSON needs (a CSV score is text);
checking them is the server's job, which names the row and field of every bad value.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from app.client.columns import (
    COLUMNS,
    Chunk,
    Column,
    split,
    timestamp_column,
)

FileFormat = Literal["csv", "jsonl", "parquet"]
SUFFIXES: dict[str, FileFormat] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}

# What pyarrow's readers parse at a time (a line must fit in it).
_BLOCK_BYTES = 8 << 20


class FileFormatError(ValueError):
    """The file cannot be read as a prediction feed; the message says why and where."""


@dataclass(frozen=True)
class PredictionFile:
    """A file to import: where it is, its format and how many data rows it holds."""

    path: Path
    format: FileFormat
    rows: int

    @classmethod
    def open(cls, path: Path, file_format: FileFormat | None = None) -> PredictionFile:
        """Detect the format (from the suffix unless given) and count the rows."""
        resolved = file_format or SUFFIXES.get(path.suffix.lower())
        if resolved is None:
            raise FileFormatError(
                f"{path}: cannot tell the format from {path.suffix!r}; pass --format "
                "csv, jsonl or parquet"
            )
        if resolved == "parquet":
            rows = _parquet(path).metadata.num_rows
        else:
            lines = _count_lines(path)
            rows = lines - 1 if resolved == "csv" and lines else lines
        return cls(path, resolved, rows)

    def chunks(self, batch_rows: int) -> Iterator[Chunk]:
        """The file's rows in order, ``batch_rows`` at a time."""
        if self.format == "csv":
            return _csv_chunks(self.path, batch_rows)
        if self.format == "jsonl":
            return _jsonl_chunks(self.path, batch_rows)
        return _parquet_chunks(self.path, batch_rows)


def _count_lines(path: Path) -> int:
    """Non-empty lines, counted in 1 MiB blocks (about a second per gigabyte)."""
    count = 0
    last = b"\n"
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _check_names(names: list[str], where: str) -> None:
    unknown = [name for name in names if name not in COLUMNS]
    if unknown:
        raise FileFormatError(f"{where}: unknown columns {unknown}; expected {list(COLUMNS)}")
    missing = [name for name in ("id", "timestamp", "score") if name not in names]
    if missing:
        raise FileFormatError(f"{where}: missing columns {missing}")


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
        header = next(csv.reader([handle.readline().decode("utf-8")]), [])
    names = [name.strip() for name in header]
    _check_names(names, f"{path}: header line")
    options = pcsv.ConvertOptions(
        column_types=dict.fromkeys(header, pa.string()),
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    first = 0
    pending: list[Any] = []  # record batches read and not yet sent
    try:
        reader = pcsv.open_csv(
            path, read_options=pcsv.ReadOptions(block_size=_BLOCK_BYTES), convert_options=options
        )
        for block in reader:
            pending.append(block)
            table = pa.Table.from_batches(pending)
            start = 0
            while table.num_rows - start >= batch_rows:
                yield Chunk(first, _arrow_columns(table.slice(start, batch_rows), names))
                start += batch_rows
                first += batch_rows
            pending = table.slice(start).to_batches()
    except pa.ArrowInvalid as error:
        raise FileFormatError(f"{path}: {error}") from None
    table = pa.Table.from_batches(pending, schema=reader.schema)
    if table.num_rows:
        yield Chunk(first, _arrow_columns(table, names))


def _arrow_columns(table: Any, names: list[str]) -> dict[str, Column]:
    """A table of text columns as the client sends them (as ``_CSV_COLUMNS`` converts)."""
    import pyarrow as pa  # noqa: PLC0415 - optional extra

    columns: dict[str, Column] = {}
    for index, name in enumerate(names):
        text = table.column(index)
        # A column of numbers in C++ (timestamps as Unix seconds); ISO timestamps are told by
        # their first value, since a failing cast costs as much as a whole successful one.
        if name == "score" or (name == "timestamp" and _is_number(text[0].as_py())):
            try:
                columns[name] = text.cast(pa.float64()).to_numpy()
                continue
            except pa.ArrowInvalid:  # ISO timestamps, or a bad score the server will name
                pass
        columns[name] = _CSV_COLUMNS[name](text.to_pylist())
    return columns


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _csv_module_blocks(path: Path) -> Iterator[dict[str, list[str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader, [])]
        _check_names(header, f"{path}: header line")
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


def _csv_timestamps(values: list[str]) -> list[Any]:
    # A column of bare numbers is Unix seconds; anything else is ISO 8601 text for the server.
    try:
        numbers: list[Any] = np.array(values, dtype=np.float64).tolist()
    except ValueError:
        return values
    return numbers


_LABELS: dict[str, int | None] = {"": None, "0": 0, "1": 1}

_CSV_COLUMNS: dict[str, Callable[[list[str]], list[Any]]] = {
    "id": lambda values: values,
    "timestamp": _csv_timestamps,
    "score": _csv_numbers,
    "label": lambda values: [_LABELS.get(value, value) for value in values],
    "segment": lambda values: [value or None for value in values],
}


def _jsonl_chunks(path: Path, batch_rows: int) -> Iterator[Chunk]:
    """pyarrow's JSON reader when it is installed and the lines fit its typed schema (about
    40% less CPU than building every line's objects); else, or from the first block it refuses
    (numeric timestamps, an unknown field, a line that is not JSON...), line by line with
    orjson, which sends odd values on for the server to refuse and names a bad line. Both cut
    the same chunks, so a fallback midway sends each row once."""
    try:
        import pyarrow as pa  # noqa: PLC0415 - optional extra
    except ImportError:
        yield from _orjson_jsonl_chunks(path, batch_rows)
        return
    sent = 0
    try:
        for chunk in _arrow_jsonl_chunks(path, batch_rows):
            yield chunk
            sent += chunk.rows
    except pa.ArrowInvalid:
        yield from _orjson_jsonl_chunks(path, batch_rows, skip=sent)


def _arrow_jsonl_chunks(path: Path, batch_rows: int) -> Iterator[Chunk]:
    import pyarrow as pa  # noqa: PLC0415 - optional extra
    import pyarrow.json as pjson  # noqa: PLC0415

    schema = pa.schema(
        [
            ("id", pa.string()),
            ("timestamp", pa.string()),
            ("score", pa.float64()),
            ("label", pa.int8()),
            ("segment", pa.string()),
        ]
    )
    reader = pjson.open_json(
        path,
        read_options=pjson.ReadOptions(block_size=_BLOCK_BYTES),
        parse_options=pjson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
    )
    first = 0
    pending: list[Any] = []  # record batches read and not yet sent
    for block in reader:
        pending.append(block)
        table = pa.Table.from_batches(pending)
        start = 0
        while table.num_rows - start >= batch_rows:
            yield Chunk(first, _arrow_json_columns(table.slice(start, batch_rows)))
            start += batch_rows
            first += batch_rows
        pending = table.slice(start).to_batches()
    table = pa.Table.from_batches(pending, schema=schema)
    if table.num_rows:
        yield Chunk(first, _arrow_json_columns(table))


def _arrow_json_columns(table: Any) -> dict[str, Column]:
    columns: dict[str, Column] = {name: table.column(name).to_pylist() for name in COLUMNS}
    # Scores as a float64 array (a null is NaN, written as null again).
    columns["score"] = table.column("score").to_numpy()
    return columns


def _orjson_jsonl_chunks(path: Path, batch_rows: int, skip: int = 0) -> Iterator[Chunk]:
    """Chunks from record ``skip`` on (a multiple of ``batch_rows``)."""
    records: list[dict[str, Any]] = []
    first = 0
    with path.open("rb") as handle:
        number = 1  # the line number of the block's first line
        while lines := list(islice(handle, 50_000)):
            records.extend(_jsonl_records(path, lines, number))
            number += len(lines)
            while len(records) >= batch_rows:
                if first >= skip:
                    yield Chunk(first, _record_columns(records[:batch_rows]))
                del records[:batch_rows]
                first += batch_rows
    if records and first >= skip:
        yield Chunk(first, _record_columns(records))


def _jsonl_records(path: Path, lines: list[bytes], number: int) -> list[dict[str, Any]]:
    """A block of lines as records, parsed as one JSON array: one orjson call instead of one a
    line (about a fifth of the CPU). Anything unexpected (not JSON, not one object per line,
    an unknown field) is found again line by line, to name the line."""
    kept = [line for line in lines if line.strip()]
    try:
        records = orjson.loads(b"[" + b",".join(kept) + b"]")
    except orjson.JSONDecodeError:
        records = None
    if (
        records is not None
        and len(records) == len(kept)
        and all(type(record) is dict for record in records)
        and set().union(*records) <= set(COLUMNS)
    ):
        parsed: list[dict[str, Any]] = records
        return parsed
    numbered = enumerate(lines, start=number)
    return [_jsonl_record(path, text, line) for line, text in numbered if text.strip()]


def _jsonl_record(path: Path, text: bytes, line: int) -> dict[str, Any]:
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise FileFormatError(f"{path}: line {line} is not JSON: {error}") from None
    if not isinstance(record, dict):
        raise FileFormatError(f"{path}: line {line} is not a JSON object")
    unknown = set(record) - set(COLUMNS)
    if unknown:
        raise FileFormatError(f"{path}: line {line}: unknown fields {sorted(unknown)}")
    return record


def _record_columns(records: list[dict[str, Any]]) -> dict[str, Column]:
    return {name: [record.get(name) for record in records] for name in COLUMNS}


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
    _check_names(names, str(path))
    first = 0
    for record_batch in parquet.iter_batches(batch_size=batch_rows):
        columns: dict[str, Column] = {}
        for name in names:
            column = record_batch.column(name)
            if name == "score" and pa.types.is_floating(column.type) and not column.null_count:
                columns[name] = column.to_numpy()  # written by orjson straight from the array
                continue
            if name == "timestamp" and pa.types.is_timestamp(column.type):
                if column.type.tz is None:
                    raise FileFormatError(
                        f"{path}: the timestamp column has no time zone; store it as UTC "
                        "(timestamp with tz) so that no window is guessed"
                    )
                utc = column.cast(pa.timestamp("us", "UTC")).to_numpy(zero_copy_only=False)
                columns[name] = timestamp_column(np.asarray(utc).astype("datetime64[us]"))
            else:
                columns[name] = column.to_pylist()
        yield from split(columns, batch_rows, first)
        first += record_batch.num_rows
