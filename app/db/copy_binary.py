"""PostgreSQL binary COPY: the one helper that runs one, and the numpy encoder of its data.

:func:`copy_in` sends rows to ``COPY ... FROM STDIN (FORMAT BINARY)`` either as Python tuples
(psycopg dumps each row in C once the column types are declared) or as a stream already encoded
here. Every COPY of calmon (the ingest write and staging, the many-row writes of app.db.bulk)
goes through it.

The encoder exists because psycopg's ``write_row`` dumps values one row at a time, and a
``timestamptz`` only from a ``datetime`` object: 100,000 of those per 50,000-row batch cost more
than the COPY itself. Here every column is laid out in one vectorised pass (big-endian values,
length words, the bytes of the texts scattered to their places), which is what lets the ingest
COPY straight into predictions with no staging table and no per-row Python. The format is
PostgreSQL's documented one (``COPY ... (FORMAT BINARY)``): a header, per row a field count and
per field a length (-1 for NULL) and its bytes, then a trailer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import psycopg

_HEADER: Final = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8  # signature, flags, no extension
_TRAILER: Final = b"\xff\xff"
# timestamptz is microseconds since 2000-01-01 00:00 UTC.
POSTGRES_EPOCH_MICROS: Final = 946_684_800_000_000


def copy_in(
    connection: psycopg.Connection[Any] | psycopg.Cursor[Any],
    target: str,
    columns: Sequence[str],
    rows: bytes | Iterable[Sequence[Any]],
    *,
    types: Sequence[str | int] = (),
) -> None:
    """One binary COPY of ``rows`` into ``columns`` of table ``target``.

    ``rows`` is either a whole stream built by :func:`copy_data` (written as is) or row tuples,
    dumped by psycopg as ``types`` (type names or oids, one per column) declare.
    """
    if isinstance(connection, psycopg.Connection):
        with connection.cursor() as cursor:
            copy_in(cursor, target, columns, rows, types=types)
        return
    statement = f"COPY {target} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    with connection.copy(statement) as copy:
        if isinstance(rows, bytes):
            copy.write(rows)
            return
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)


@dataclass(frozen=True)
class Fixed:
    """A fixed-width column: values already of a big-endian dtype ('>i2', '>i4', '>i8', '>f8'),
    and where given, the rows that are NULL."""

    values: npt.NDArray[np.generic]
    nulls: npt.NDArray[np.bool_] | None = None


@dataclass(frozen=True)
class Texts:
    """A text column: the UTF-8 bytes of all values end to end and each value's byte length,
    and where given, the rows that are NULL (their value is empty)."""

    data: bytes
    lengths: npt.NDArray[np.int64]
    nulls: npt.NDArray[np.bool_] | None = None

    @classmethod
    def optional(cls, values: list[str]) -> Texts:
        """:meth:`of`, with the empty values as NULL (for a column whose values are never
        empty, where the empty string stands for none)."""
        texts = cls.of(values)
        empty = texts.lengths == 0
        return Texts(texts.data, texts.lengths, empty if empty.any() else None)

    @classmethod
    def of(cls, values: list[str]) -> Texts:
        joined = "".join(values)
        data = joined.encode()
        if len(data) == len(joined):  # all ASCII: byte lengths are character counts
            lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
            return cls(data, lengths)
        encoded = [value.encode() for value in values]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(values))
        return cls(b"".join(encoded), lengths)

    def byte_order(self) -> npt.NDArray[np.intp] | None:
        """The permutation that sorts the values by their bytes; None if they already are.

        The values are laid out as fixed-width byte strings padded with NUL, which numpy
        compares like the unpadded ones (a value never holds a NUL: app/input_rules.py).
        """
        n = len(self.lengths)
        if n < 2:
            return None
        width = max(int(self.lengths.max()), 1)
        firsts = np.cumsum(self.lengths) - self.lengths
        matrix = np.zeros((n, width), dtype=np.uint8)
        rows = np.repeat(np.arange(n), self.lengths)
        columns = np.arange(len(self.data)) - np.repeat(firsts, self.lengths)
        matrix[rows, columns] = np.frombuffer(self.data, dtype=np.uint8)
        keys = matrix.view(f"S{width}").ravel()
        if not (keys[1:] < keys[:-1]).any():
            return None
        return np.argsort(keys, kind="stable")

    def take(self, order: npt.NDArray[np.intp]) -> Texts:
        """The values in the order ``order``."""
        firsts = np.cumsum(self.lengths) - self.lengths
        lengths = self.lengths[order]
        total = int(lengths.sum())
        new_firsts = np.cumsum(lengths) - lengths
        sources = np.repeat(firsts[order] - new_firsts, lengths) + np.arange(total)
        data = np.frombuffer(self.data, dtype=np.uint8)[sources].tobytes()
        return Texts(data, lengths, None if self.nulls is None else self.nulls[order])


Column = Fixed | Texts


def timestamptz(unix_micros: npt.NDArray[np.int64]) -> Fixed:
    """A timestamptz column from UTC epoch microseconds."""
    return Fixed((unix_micros - POSTGRES_EPOCH_MICROS).astype(">i8"))


def copy_data(columns: list[Column], rows: int) -> bytes:
    """The whole binary COPY stream of ``rows`` rows made of ``columns``, in table order."""
    sizes = [_field_sizes(column, rows) for column in columns]
    row_sizes = 2 + np.sum(sizes, axis=0, dtype=np.int64) if columns else np.full(rows, 2)
    ends = np.cumsum(row_sizes, dtype=np.int64)
    starts = len(_HEADER) + ends - row_sizes
    body_end = len(_HEADER) + (int(ends[-1]) if rows else 0)
    out = np.zeros(body_end + len(_TRAILER), dtype=np.uint8)
    out[: len(_HEADER)] = np.frombuffer(_HEADER, dtype=np.uint8)
    out[body_end:] = np.frombuffer(_TRAILER, dtype=np.uint8)
    _put(out, starts, np.full(rows, len(columns), dtype=">i2"))
    at = starts + 2
    for column, size in zip(columns, sizes, strict=True):
        _put_column(out, at, column, rows)
        at = at + size
    return out.tobytes()


def _field_sizes(column: Column, rows: int) -> npt.NDArray[np.int64]:
    """Bytes each row's field takes: the 4-byte length word plus the value (none if NULL)."""
    if isinstance(column, Texts):
        return 4 + column.lengths
    sizes = np.full(rows, 4 + column.values.dtype.itemsize, dtype=np.int64)
    if column.nulls is not None:
        sizes[column.nulls] = 4
    return sizes


def _put_column(
    out: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], column: Column, rows: int
) -> None:
    if isinstance(column, Texts):
        lengths = column.lengths.astype(">i4")
        if column.nulls is not None:  # a NULL's length word is -1, and it has no bytes
            lengths[column.nulls] = -1
        _put(out, at, lengths)
        total = int(column.lengths.sum())
        if total:
            firsts = np.cumsum(column.lengths) - column.lengths  # each value's offset in data
            targets = np.repeat(at + 4 - firsts, column.lengths) + np.arange(total)
            out[targets] = np.frombuffer(column.data, dtype=np.uint8)
        return
    width = column.values.dtype.itemsize
    lengths = np.full(rows, width, dtype=">i4")
    present = np.ones(rows, dtype=bool) if column.nulls is None else ~column.nulls
    lengths[~present] = -1
    _put(out, at, lengths)
    _put(out, at[present] + 4, column.values[present])


def _put(
    out: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], values: npt.NDArray[np.generic]
) -> None:
    """Write each of ``values`` (big-endian) at its offset in ``out``."""
    width = values.dtype.itemsize
    matrix = np.ascontiguousarray(values).view(np.uint8).reshape(len(values), width)
    out[at[:, None] + np.arange(width)] = matrix
