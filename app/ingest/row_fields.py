"""A row's transaction fields as sent (``amount``, ``entity``): checked column by column.

``amount`` is the transaction's value in the model's currency (a number from 0 to MAX_AMOUNT);
``entity`` the card or account it was made with (a string of 1 to MAX_ENTITY_LENGTH
characters, not blank), by which per-entity metrics group rows. Both are optional per row and
per batch. A column no row sent (absent, or only nulls) is ``None`` here: it costs one C-level
type scan, is not written, and the batch hashes as it did before the fields existed. Where
some rows sent one, a row that sent none holds a sentinel no valid value can take (NO_AMOUNT,
NO_ENTITY), so that the columns stay a float64 array and a list of strings end to end: the
hash, the binary COPY and its NULLs are computed column-wise from them.
"""

from __future__ import annotations

from typing import Final, cast

import numpy as np
import numpy.typing as npt

from app.ingest.errors import Problems, RowError
from app.input_rules import MAX_AMOUNT, MAX_ENTITY_LENGTH, NUL_MESSAGE, contains_nul

AMOUNT: Final = "amount"
ENTITY: Final = "entity"
ROW_FIELDS: Final = (AMOUNT, ENTITY)
NO_AMOUNT: Final = float("nan")
"""A row without an amount, in a column where others have one (an amount is finite)."""
NO_ENTITY: Final = ""
"""A row without an entity, in a column where others have one (an entity is never empty)."""
AMOUNT_RULE: Final = (
    f"must be a number from 0 to {MAX_AMOUNT:.0e} (the transaction's value), or null"
)
ENTITY_RULE: Final = f"must be a string of 1 to {MAX_ENTITY_LENGTH} characters, not blank, or null"
_NONE: Final = type(None)


def amounts(values: list[object], problems: Problems) -> npt.NDArray[np.float64] | None:
    """``amount`` values as float64 (NO_AMOUNT where a row sent none), None if no row sent
    one; a value that is no number from 0 to MAX_AMOUNT (a boolean, a string, NaN, negative,
    absurdly large) is a problem of its row."""
    types = set(map(type, values))
    if types <= {_NONE}:
        return None
    if types <= {float, int, _NONE}:
        try:
            numbers = np.array(values, dtype=np.float64)  # None becomes NaN
        except OverflowError:  # an integer too large for a float: row by row below
            pass
        else:
            # A row sent none only where it sent null: a NaN (a CSV "nan") is refused.
            sent = np.ones(len(values), dtype=np.bool_)
            if _NONE in types:
                sent = np.fromiter((v is not None for v in values), np.bool_, len(values))
            bad = sent & ~((numbers >= 0) & (numbers <= MAX_AMOUNT))  # NaN fails both
            problems.add_mask(AMOUNT, bad, AMOUNT_RULE)
            # + 0.0: -0.0 is stored and hashed as 0.0; the refused rows as none (refused anyway).
            return np.where(sent & ~bad, numbers + 0.0, NO_AMOUNT)
    numbers = np.full(len(values), NO_AMOUNT, dtype=np.float64)
    for row, value in enumerate(values):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, float | int):
            problems.add(RowError(row, AMOUNT, AMOUNT_RULE))
            continue
        number = float(value) if abs(value) < 1e308 else float("inf")
        if 0 <= number <= MAX_AMOUNT:  # NaN and infinity fail
            numbers[row] = number + 0.0
        else:
            problems.add(RowError(row, AMOUNT, AMOUNT_RULE))
    return numbers


def entities(values: list[object], problems: Problems) -> list[str] | None:
    """``entity`` values (NO_ENTITY where a row sent none), None if no row sent one; a value
    that is not a string of 1 to MAX_ENTITY_LENGTH characters, is blank or holds a NUL is a
    problem of its row."""
    types = set(map(type, values))
    if types <= {_NONE}:
        return None
    if types == {str}:
        strings = cast("list[str]", values)
        lengths = np.fromiter(map(len, strings), np.int64, len(strings))
        bad = (lengths == 0) | (lengths > MAX_ENTITY_LENGTH)
        if any(map(str.isspace, strings)):  # one C-level pass; rows named only if needed
            bad |= np.fromiter(map(str.isspace, strings), np.bool_, len(strings))
        problems.add_mask(ENTITY, bad, ENTITY_RULE)
        if contains_nul("".join(strings)):
            nul = np.fromiter(map(contains_nul, strings), np.bool_, len(strings))
            problems.add_mask(ENTITY, nul & ~bad, NUL_MESSAGE)
        return strings
    # Gaps (nulls) or wrong types: row by row.
    kept: list[str] = []
    for row, value in enumerate(values):
        if value is None:
            kept.append(NO_ENTITY)
        elif (
            not isinstance(value, str) or not 0 < len(value) <= MAX_ENTITY_LENGTH or value.isspace()
        ):
            problems.add(RowError(row, ENTITY, ENTITY_RULE))
            kept.append(NO_ENTITY)
        elif contains_nul(value):
            problems.add(RowError(row, ENTITY, NUL_MESSAGE))
            kept.append(NO_ENTITY)
        else:
            kept.append(value)
    return kept
