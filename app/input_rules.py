"""The rules every value a client sends must meet, whichever entry point it comes through.

Three places enforce them, each on what only it sees: the URL middleware
(``app.api.inputs``: path and query), the request schemas (``app.schemas.base``: JSON bodies
read by pydantic) and ingestion's validation (``app.ingest``: batch and label bodies, read
column-wise). The rules themselves live here, once.
"""

from __future__ import annotations

from typing import Final

NUL: Final = "\x00"
NUL_MESSAGE: Final = "must not contain a NUL character (\\u0000)"
"""PostgreSQL text cannot hold NUL; SQLite can, so it is refused on both for one behaviour."""

MAX_DB_INTEGER: Final = 2**31 - 1
"""The widest integer a request may set: every integer setting is a PostgreSQL ``integer``."""

MAX_AMOUNT: Final = 1e15
"""The largest ``amount`` a row may carry, and the largest ``review_cost``: more than any
transaction in any currency (a quadrillion), and small enough that a window's sums of amounts,
of their squares and of their products by card stay far inside a double. An amount of 1e308
was accepted and made every computation of its window overflow (the window was parked)."""

MAX_ENTITY_LENGTH: Final = 200
"""The longest ``entity`` (a card or account) a row may carry: ``predictions.entity`` is a
``VARCHAR`` of this length (app.db.tables), and ingestion refuses a longer one by row."""


def contains_nul(text: str) -> bool:
    """Whether ``text`` holds a NUL character."""
    return NUL in text


def check_text(value: str) -> str:
    """``value`` unchanged, or ValueError if it holds a NUL character."""
    if NUL in value:
        raise ValueError(NUL_MESSAGE)
    return value


def check_integer(value: int) -> int:
    """``value`` unchanged, or ValueError if a database integer cannot hold it."""
    if not -MAX_DB_INTEGER <= value <= MAX_DB_INTEGER:
        raise ValueError(f"must be between {-MAX_DB_INTEGER} and {MAX_DB_INTEGER}")
    return value
