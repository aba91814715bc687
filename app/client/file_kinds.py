"""What a feed file is (predictions or labels) and the names of its columns: shared by the
readers of app/client/files.py (CSV, Parquet) and app/client/json_lines.py."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal

from app.client.columns import COLUMNS, LABEL_COLUMNS, Column

FeedKind = Literal["predictions", "labels"]
# What pyarrow's readers parse at a time (a line must fit in it).
BLOCK_BYTES = 8 << 20
# Sent only when a chunk has one: a file without them keeps the batch ids it had before they
# existed (a resumed import replays what an older calmon stored).
OPTIONAL_FIELDS = ("labelled_at", "source", "amount", "entity")


class FileFormatError(ValueError):
    """The file cannot be read as a prediction feed; the message says why and where."""


def feed_kind(names: list[str]) -> FeedKind:
    """Labels when the columns have no prediction (neither timestamp nor score), else
    predictions: a prediction file missing one of them is reported as such."""
    return "labels" if not {"timestamp", "score"} & set(names) else "predictions"


def check_names(names: list[str], where: str) -> None:
    """Refuse names that are neither a prediction feed's nor a label feed's, naming ``where``."""
    kind = feed_kind(names)
    allowed = COLUMNS if kind == "predictions" else LABEL_COLUMNS
    unknown = [name for name in names if name not in allowed]
    if unknown:
        hint = "" if kind == "predictions" else " (a label file: no timestamp and no score)"
        raise FileFormatError(f"{where}: unknown columns {unknown}; expected {list(allowed)}{hint}")
    required = ("id", "timestamp", "score") if kind == "predictions" else ("id", "label")
    missing = [name for name in required if name not in names]
    if missing:
        raise FileFormatError(f"{where}: missing columns {missing}")


def without_empty_optional_fields(columns: dict[str, Column]) -> dict[str, Column]:
    """The columns, less an optional one (OPTIONAL_FIELDS) that no row of the chunk has."""
    return {
        name: values
        for name, values in columns.items()
        if name not in OPTIONAL_FIELDS or any(value is not None for value in values)
    }


def arrow_batches(reader: Iterable[Any], batch_rows: int, schema: Any) -> Iterator[Any]:
    """pyarrow tables of exactly ``batch_rows`` rows, then the remainder if any, from a reader's
    record batches of whatever size its blocks give: chunk boundaries fall on the same rows
    whichever reader (CSV, JSON lines) cut them, so a resumed import skips whole chunks."""
    import pyarrow as pa  # noqa: PLC0415 - optional extra

    pending: list[Any] = []  # record batches read and not yet sent
    for block in reader:
        pending.append(block)
        table = pa.Table.from_batches(pending)
        start = 0
        while table.num_rows - start >= batch_rows:
            yield table.slice(start, batch_rows)
            start += batch_rows
        pending = table.slice(start).to_batches()
    table = pa.Table.from_batches(pending, schema=schema)
    if table.num_rows:
        yield table
