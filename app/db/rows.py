"""Stored rows into the domain's dataclasses, field by field by name.

One rule instead of a keyword list copied by hand for each type: a field the dataclass gains is
read from the column of the same name, and a column it lacks raises ``AttributeError`` at once
rather than being left at a default.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def from_row(cls: type[T], row: object, **given: Any) -> T:
    """``cls`` with every field read from ``row``'s attribute of the same name, but those
    ``given`` (a field whose stored form differs: bytes to decode, a code to look up).

    >>> from dataclasses import dataclass
    >>> from types import SimpleNamespace
    >>> @dataclass
    ... class Window:
    ...     start: str
    ...     rows: int
    >>> from_row(Window, SimpleNamespace(start="2026-11-01", rows=7, extra=1))
    Window(start='2026-11-01', rows=7)
    >>> from_row(Window, SimpleNamespace(start="2026-11-01", rows=b"7"), rows=7)
    Window(start='2026-11-01', rows=7)
    """
    read = {f.name: getattr(row, f.name) for f in fields(cls) if f.init and f.name not in given}
    return cls(**read, **given)
