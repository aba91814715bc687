"""A JSON body turned into Python objects, at the least memory a whole-body parse can cost.

msgspec builds the objects straight from the bytes. orjson (used before) first builds a
document of its own holding a copy of every string, then the objects, so that a body of long
or many strings briefly existed three times (the bytes, the document, the objects): 3.8 times
CALMON_MAX_BODY_BYTES for the worst body of bench.body_memory, 2.6 times with msgspec, which is
also faster on an ordinary batch (measured in /work/notes/issue-16-memory.md).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from app.ingest.errors import RowError
from app.ingest.nonfinite import non_finite_errors

_DECODER: Final = msgspec.json.Decoder()


class Row(msgspec.Struct, forbid_unknown_fields=True):
    """A row object of a row-JSON batch, its values not looked at (app.ingest.validate checks
    them). A field the row does not send is ``UNSET``, so that an optional column exists only
    where some row sends it, as with the row objects read as dicts."""

    id: Any
    timestamp: Any
    score: Any
    label: Any = msgspec.UNSET
    segment: Any = msgspec.UNSET
    labelled_at: Any = msgspec.UNSET
    source: Any = msgspec.UNSET
    amount: Any = msgspec.UNSET
    entity: Any = msgspec.UNSET


class RowsBody(msgspec.Struct, forbid_unknown_fields=True):
    """A row-JSON body that is well formed: ``rows`` of :class:`Row`, and perhaps a batch id."""

    rows: list[Row]
    batch_id: Any = None


_ROWS_DECODER: Final = msgspec.json.Decoder(RowsBody)


def load_rows(body: bytes | bytearray) -> RowsBody | None:
    """``body`` as a well-formed row-JSON body, or None when it is anything else (columnar
    JSON, or a body with a problem: :func:`load_json` and the checks after it name it).

    The rows become objects of one class with no per-row dict or key strings: 50,000 rows with
    an amount and an entity parse and become columns in 29 ms where dicts took 45 ms.
    """
    try:
        return _ROWS_DECODER.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None  # ValidationError is a DecodeError


class InvalidJsonError(ValueError):
    """The body is not JSON: ``reason`` says where, ``non_finite`` names each NaN or Infinity
    when those are what broke it."""

    def __init__(self, reason: str, non_finite: list[RowError]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.non_finite = non_finite


def load_json(body: bytes | bytearray, entries_key: str) -> object:
    """The document ``body`` holds; InvalidJsonError if it is not JSON.

    ``entries_key`` names the array of row objects, to name the rows holding NaN or Infinity.
    """
    try:
        return _DECODER.decode(body)
    except msgspec.ValidationError:  # untyped, the only one is a number past a double's range
        reason = "a number is out of range (too large for a double: it would be infinity)"
    except msgspec.DecodeError as error:
        reason = str(error)
    except UnicodeDecodeError as error:
        reason = f"not UTF-8: {error}"
    except RecursionError:
        reason = "nested too deeply"
    raise InvalidJsonError(reason, non_finite_errors(body, entries_key))
