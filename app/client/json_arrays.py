"""The client's JSON: msgspec (the server's ingest parser too) for values, numpy for timestamps.

msgspec writes Python values in C but not numpy arrays: a number column goes through
``tolist()`` (about a millisecond per 50,000 floats). Timestamps would cost more that way
(``np.datetime_as_string`` took 13 ms per 50,000, eight times orjson's direct path), so
:func:`datetimes_json` writes their ISO 8601 text from integer arithmetic on the whole
column at once, in about as long as orjson took.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

DecodeError = msgspec.DecodeError
"""What :func:`loads` raises on text that is not JSON."""

# Days from 0000-03-01 to 1970-01-01 in the proleptic Gregorian calendar (the civil-from-days
# algorithm counts years from March, so a leap day ends its year).
_EPOCH_SHIFT = 719_468
_DAYS_PER_ERA = 146_097  # 400 years
_MICROS_PER_DAY = 86_400_000_000
# Four-digit years only (0001-01-01 up to 10000-01-01, in microseconds since the epoch).
_FIRST_MICROS = -62_135_596_800_000_000
_END_MICROS = 253_402_300_800_000_000
# Where each two-digit pair starts in '"YYYY-MM-DDTHH:MM:SS.ffffffZ",': century, year, month,
# day, hour, minute, second, then the fraction's three pairs.
_PAIRS_AT = (1, 3, 6, 9, 12, 15, 18)
_FRACTION_PAIRS_AT = (21, 23, 25)
_TEMPLATE = b'"0000-00-00T00:00:00.000000Z",'
_WHOLE_TEMPLATE = b'"0000-00-00T00:00:00Z",'
_FRACTION_BYTES = slice(20, 27)  # ".ffffff"


def _numpy_scalar(value: Any) -> Any:
    """A numpy scalar in a caller's list (an np.int64 id, an np.bool_) as its Python value."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


_ENCODER = msgspec.json.Encoder(enc_hook=_numpy_scalar)


def dumps(value: Any) -> bytes:
    """``value`` as JSON (NaN and infinities as null, as the server reads a missing value)."""
    return _ENCODER.encode(value)


def loads(data: bytes | str) -> Any:
    """The value of a JSON text; :data:`DecodeError` if it is not one."""
    return msgspec.json.decode(data)


def numbers_json(array: np.ndarray[Any, Any]) -> bytes:
    """A numeric array as a JSON array (NaN and infinities as null)."""
    return _ENCODER.encode(array.tolist())


def datetimes_json(array: np.ndarray[Any, Any]) -> bytes:
    """A datetime64 array of UTC instants as a JSON array of ISO 8601 strings with ``Z``, to
    the microsecond (the fraction left out of a whole second, as orjson wrote it).

    >>> datetimes_json(np.array(["1969-12-31T23:59:59.5", "2024-02-29T12:00"], "datetime64[us]"))
    b'["1969-12-31T23:59:59.500000Z","2024-02-29T12:00:00Z"]'
    """
    micros = array.astype("datetime64[us]").astype(np.int64)
    if micros.size == 0:
        return b"[]"
    if micros.min() < _FIRST_MICROS or micros.max() >= _END_MICROS:
        # Outside four-digit years (or NaT, the smallest int64; the server refuses both):
        # numpy's text, slowly.
        return _ENCODER.encode(np.datetime_as_string(array, unit="us", timezone="UTC").tolist())
    days, of_day = np.divmod(micros, _MICROS_PER_DAY)
    seconds, fraction = np.divmod(of_day, 1_000_000)
    # int32 from here: numpy vectorises its division, not int64's (a third of the time).
    year, month, day = _civil_from_days(days.astype(np.int32))
    hour, rest = np.divmod(seconds.astype(np.int32), 3600)
    minute, second = np.divmod(rest, 60)
    pairs = [year // 100, year % 100, month, day, hour, minute, second]
    starts = list(_PAIRS_AT)
    whole_seconds = fraction == 0
    whole = bool(whole_seconds.all())
    if not whole:
        fraction = fraction.astype(np.int32)
        pairs += [fraction // 10_000, fraction // 100 % 100, fraction % 100]
        starts += _FRACTION_PAIRS_AT
    template = _WHOLE_TEMPLATE if whole else _TEMPLATE
    # One row per byte of the text and one column per value: each write is contiguous, and
    # the transposed copy that tobytes makes is the one pass over the whole output.
    text = np.empty((len(template), micros.size), dtype=np.uint8)
    text[:] = np.frombuffer(template, dtype=np.uint8)[:, np.newaxis]
    for start, values in zip(starts, pairs, strict=True):
        tens = (values // 10).astype(np.uint8)
        text[start] = tens + ord("0")
        text[start + 1] = values.astype(np.uint8) - tens * 10 + ord("0")
    if whole or not whole_seconds.any():
        return b"[" + text.T.tobytes()[:-1] + b"]"
    # Some values whole seconds, some not: the whole ones lose their ".000000", value by value
    # as orjson wrote them (the batch ids, hashes of this text, stay what they were).
    keep = np.ones(text.shape, dtype=bool)
    keep[_FRACTION_BYTES, :] = ~whole_seconds
    return b"[" + text.T[keep.T].tobytes()[:-1] + b"]"


def _civil_from_days(days: Any) -> tuple[Any, Any, Any]:
    """Year, month and day of days since 1970-01-01 (H. Hinnant, "chrono-compatible low-level
    date algorithms", days_from_civil's inverse), on whole arrays."""
    shifted = days + _EPOCH_SHIFT
    era = np.floor_divide(shifted, _DAYS_PER_ERA)
    day_of_era = shifted - era * _DAYS_PER_ERA
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_from_march = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_from_march + 2) // 5 + 1
    month = np.where(month_from_march < 10, month_from_march + 3, month_from_march - 9)
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day
