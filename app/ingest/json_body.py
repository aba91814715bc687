"""A JSON body turned into Python objects, at the least memory a whole-body parse can cost.

msgspec builds the objects straight from the bytes. orjson (used before) first builds a
document of its own holding a copy of every string, then the objects, so that a body of long
or many strings briefly existed three times (the bytes, the document, the objects): 3.8 times
CALMON_MAX_BODY_BYTES for the worst body of bench.body_memory, 2.6 times with msgspec, which is
also faster on an ordinary batch (measured in /work/notes/issue-16-memory.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import GenericAlias
from typing import Any, Final

import msgspec

from app.ingest.errors import RowError
from app.ingest.nonfinite import non_finite_errors

_DECODER: Final = msgspec.json.Decoder()


def rows_decoder(fields: Sequence[str], required: Sequence[str]) -> msgspec.json.Decoder[Any]:
    """A decoder of well-formed row-JSON bodies, ``{"rows": [...], "batch_id": ...}``, whose
    rows are objects of one Struct class with ``fields`` (values not looked at:
    app.ingest.validate checks them; a field a row does not send is ``UNSET``, the ones in
    ``required`` must be sent, no other field is allowed)."""
    row = msgspec.defstruct(
        "Row",
        [(name, Any) if name in required else (name, Any, msgspec.UNSET) for name in fields],
        forbid_unknown_fields=True,
        # Not tracked by the cycle collector: values decoded from JSON cannot form a cycle,
        # and 50,000 tracked rows cost 5 ms of a decode in collections (15%).
        gc=False,
    )
    body = msgspec.defstruct(
        "RowsBody",
        [("rows", GenericAlias(list, (row,))), ("batch_id", Any, None)],  # list[row]
        forbid_unknown_fields=True,
    )
    return msgspec.json.Decoder(body)


def load_rows(body: bytes | bytearray, decoder: msgspec.json.Decoder[Any]) -> Any | None:
    """``body`` decoded by a :func:`rows_decoder`, or None when it is anything else (columnar
    JSON, or a body with a problem: :func:`load_json` and the checks after it name it).

    The rows become objects of one class with no per-row dict or key strings: 50,000 rows with
    an amount and an entity parse and become columns in 29 ms where dicts took 45 ms.
    """
    try:
        return decoder.decode(body)
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
