"""The client's JSON writer (app/client/json_arrays.py): timestamps written from numpy arithmetic
say what numpy's own text says, for every instant of four-digit years."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from app.client.json_arrays import datetimes_json, dumps, numbers_json

# 0001-01-01 and the last microsecond of 9999, in microseconds since the epoch.
FIRST = -62_135_596_800_000_000
LAST = 253_402_300_800_000_000 - 1


def numpy_text(micros: np.ndarray[tuple[int], np.dtype[np.int64]]) -> list[str]:
    """numpy's ISO text of each instant, its fraction left out on a whole second."""
    texts = np.datetime_as_string(micros.astype("datetime64[us]"), unit="us", timezone="UTC")
    return [t.replace(".000000Z", "Z") for t in texts.tolist()]


@pytest.mark.parametrize("whole_share", [0.0, 0.5, 1.0])
def test_random_instants_read_as_numpy_writes_them(whole_share: float) -> None:
    rng = np.random.default_rng(7)
    micros = rng.integers(FIRST, LAST, 20_000)
    whole = rng.random(micros.size) < whole_share
    micros[whole] -= micros[whole] % 1_000_000
    assert msgspec.json.decode(datetimes_json(micros.astype("datetime64[us]"))) == numpy_text(
        micros
    )


def test_calendar_edges() -> None:
    instants = np.array(
        ["0001-01-01", "1600-02-29T01:02:03.000004", "1900-03-01", "1969-12-31T23:59:59.999999",
         "1970-01-01", "2000-02-29", "2100-02-28T23:59:59", "9999-12-31T23:59:59.999999"],
        dtype="datetime64[us]",
    )  # fmt: skip
    assert msgspec.json.decode(datetimes_json(instants)) == numpy_text(instants.astype(np.int64))


def test_outside_four_digit_years_and_empty_columns() -> None:
    assert datetimes_json(np.array([], dtype="datetime64[us]")) == b"[]"
    far = np.array(["10000-01-01", "NaT"], dtype="datetime64[us]")
    assert datetimes_json(far) == b'["10000-01-01T00:00:00.000000Z","NaT"]'


def test_numpy_scalars_and_non_finite_numbers() -> None:
    assert dumps([np.int64(3), np.float32(0.5), np.bool_(True), "a"]) == b'[3,0.5,true,"a"]'
    assert numbers_json(np.array([0.25, np.nan, -np.inf])) == b"[0.25,null,null]"
    with pytest.raises(TypeError, match="cannot write object"):
        dumps([object()])
