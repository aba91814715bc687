"""Reading a prediction file (CSV, JSON lines, Parquet) as chunks for the client.

A file's columns are named as the API's (``id``, ``timestamp``, ``score`` and optionally
``label``, ``segment``). Values are converted only as far as JSON needs (a CSV score is text);
checking them is the server's job, which names the row and field of every bad value.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from app.client.columns import COLUMNS, Chunk, rows_to_chunks, split, timestamp_column

FileFormat = Literal["csv", "jsonl", "parquet"]
SUFFIXES: dict[str, FileFormat] = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


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
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader, [])]
        _check_names(header, f"{path}: header line")
        converters = [_CSV_CONVERTERS.get(name, _text) for name in header]

        def rows() -> Iterator[list[Any]]:
            for line, row in enumerate(reader, start=2):
                if len(row) != len(header):
                    raise FileFormatError(
                        f"{path}: line {line} has {len(row)} fields, the header {len(header)}"
                    )
                yield [convert(value) for convert, value in zip(converters, row, strict=True)]

        yield from rows_to_chunks(rows(), header, batch_rows)


def _text(value: str) -> Any:
    return value if value != "" else None


def _csv_number(value: str) -> Any:
    try:
        return float(value)
    except ValueError:
        return value  # the server refuses it, naming the row and the field


def _csv_timestamp(value: str) -> Any:
    # A bare number is Unix seconds; anything else is ISO 8601 text for the server to parse.
    return _csv_number(value) if value[:1].isdigit() and value.replace(".", "").isdigit() else value


def _csv_label(value: str) -> Any:
    return {"": None, "0": 0, "1": 1}.get(value.strip(), value)


_CSV_CONVERTERS: dict[str, Callable[[str], Any]] = {
    "id": str,
    "timestamp": _csv_timestamp,
    "score": _csv_number,
    "label": _csv_label,
    "segment": _text,
}


def _jsonl_chunks(path: Path, batch_rows: int) -> Iterator[Chunk]:
    with path.open("rb") as handle:

        def rows() -> Iterator[list[Any]]:
            for line, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    record = orjson.loads(text)
                except orjson.JSONDecodeError as error:
                    raise FileFormatError(f"{path}: line {line} is not JSON: {error}") from None
                if not isinstance(record, dict):
                    raise FileFormatError(f"{path}: line {line} is not a JSON object")
                unknown = set(record) - set(COLUMNS)
                if unknown:
                    raise FileFormatError(f"{path}: line {line}: unknown fields {sorted(unknown)}")
                yield [record.get(name) for name in COLUMNS]

        yield from rows_to_chunks(rows(), COLUMNS, batch_rows)


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
        columns: dict[str, list[Any]] = {}
        for name in names:
            column = record_batch.column(name)
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
