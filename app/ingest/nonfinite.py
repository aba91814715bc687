"""NaN and Infinity in a JSON body, named by row and field.

JSON has no NaN or Infinity, but pandas' ``to_json`` and Python's ``json.dumps`` write them, so a
body holding one is common. The fast parser (msgspec) only says where in the text it stopped
(``byte 344665``); this module reads such a body again, with the standard library parser
told to mark those constants, and names every row and field that holds one. It runs only after
the fast parse failed on a body containing one of the words, and only on bodies up to
``NAMED_UP_TO`` bytes: the second parse holds the body, its text and its objects at once
(about 3.7 times the body), which past that size would make a broken body the costliest one.
"""

from __future__ import annotations

import json
from typing import Final

from app.ingest.errors import BATCH_LEVEL, RowError

_WORDS: Final = (b"NaN", b"Infinity")
NAMED_UP_TO: Final = 16 * 1024 * 1024
"""Largest body whose NaN and Infinity are named by row (a 100,000-row pandas batch is ~10 MB)."""
MESSAGE: Final = (
    "{word} is not valid JSON (JSON has no NaN or Infinity): send a finite number, "
    "or null where the value may be unknown"
)


class _NonFinite:
    """Stands for a NaN, Infinity or -Infinity the body held."""

    def __init__(self, word: str) -> None:
        self.word = word


def non_finite_errors(body: bytes | bytearray, entries_key: str) -> list[RowError]:
    """The rows and fields holding NaN or Infinity; empty when the body is broken otherwise.

    ``entries_key`` names the array of row objects: ``rows`` for a batch, ``labels`` for a label
    update (whose body may also be the bare array); a batch's ``columns`` are read too.
    """
    if len(body) > NAMED_UP_TO or not any(word in body for word in _WORDS):
        return []
    try:
        # Read as Latin-1: one byte per character whatever the body holds, so no string is
        # widened to 2 or 4 bytes a character (UTF-8 text only matters inside strings, and
        # here only field names, which are ASCII when they are valid, are shown).
        document = json.loads(body.decode("latin-1"), parse_constant=_NonFinite)
    except (ValueError, RecursionError):  # broken in another way too: the fast parser's error
        return []
    entries = document.get(entries_key) if isinstance(document, dict) else document
    errors: list[RowError] = []
    if isinstance(entries, list):
        for row, entry in enumerate(entries):
            if isinstance(entry, dict):
                errors.extend(_error(row, str(k), v) for k, v in entry.items() if _bad(v))
    columns = document.get("columns") if isinstance(document, dict) else None
    if isinstance(columns, dict):
        for field, values in columns.items():
            if isinstance(values, list):
                errors.extend(_error(row, str(field), v) for row, v in enumerate(values) if _bad(v))
    if isinstance(document, dict):
        errors.extend(_error(BATCH_LEVEL, str(k), v) for k, v in document.items() if _bad(v))
    return sorted(errors)


def _bad(value: object) -> bool:
    return isinstance(value, _NonFinite)


def _error(row: int, field: str, value: object) -> RowError:
    assert isinstance(value, _NonFinite)
    return RowError(row, field, MESSAGE.format(word=value.word))
