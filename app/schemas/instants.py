"""Dates and instants as people write them: ISO 8601 text, never a number.

pydantic reads a number (or a numeric string, as every query parameter is) as a Unix
timestamp: ``to=0.5`` became 1970-01-01T00:00:00.5 and ``"start": 0`` the first of January
1970. Nobody means that; a date given as a number is refused by name instead.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def not_a_number(value: Any) -> Any:
    """``value`` unchanged unless it is a number or numeric text."""
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric or (isinstance(value, str) and _NUMBER.fullmatch(value.strip())):
        raise ValueError(
            "must be an ISO 8601 date or date-time (2026-01-31T00:00:00Z), not a number"
        )
    return value


def in_utc_range(value: datetime) -> datetime:
    """``value`` unchanged if it has a UTC time: 0001-01-01T00:00:01+01:17 is a valid ISO 8601
    instant whose UTC time falls before year 1, which no datetime holds (every comparison and
    query with it would fail)."""
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError("must fall between the years 1 and 9999 in UTC") from None
    return value


Instant = Annotated[AwareDatetime, BeforeValidator(not_a_number), AfterValidator(in_utc_range)]
"""A date-time with a UTC offset, as ISO 8601 text."""
Day = Annotated[date, BeforeValidator(not_a_number)]
"""A calendar day, as ISO 8601 text (2026-01-31)."""
