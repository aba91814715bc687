"""Window flooring: a UTC instant to the start of its hour/day/week in the model's time zone.

Windows are local-calendar periods (a fraud team's "Monday" is Monday in its own zone) stored as
the UTC instant at which each one starts. Across a DST change a local day lasts 23 or 25 hours,
so flooring is not arithmetic on UTC: the window boundaries that can matter for a batch are
listed once with zoneinfo (a handful of calendar dates) and every row is placed among them with
one ``searchsorted``.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt

from app.ingest.timestamps import MICROS_PER_SECOND, datetime_to_micros
from app.monitoring.vocabulary import GRANULARITIES, Granularity

_MICROS_PER_DAY: Final = 86_400 * MICROS_PER_SECOND


def floor_to_windows(
    micros: npt.NDArray[np.int64], granularity: Granularity, timezone: str
) -> npt.NDArray[np.int64]:
    """Start of each timestamp's window, as UTC epoch microseconds.

    Parameters
    ----------
    micros
        UTC epoch microseconds.
    granularity
        ``hour``, ``day`` or ``week`` (ISO weeks: a window starts on Monday 00:00 local time).
    timezone
        IANA zone name whose wall clock defines the windows (``Europe/Paris``, ``UTC``...).

    Returns
    -------
    numpy.ndarray
        Same shape as ``micros``: the UTC instant at which each row's local window starts.
    """
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown granularity {granularity!r}")
    if micros.size == 0:
        return np.empty(0, dtype=np.int64)
    boundaries = _window_starts(_local_dates(micros), granularity, ZoneInfo(timezone))
    index = np.searchsorted(boundaries, micros, side="right") - 1
    starts: npt.NDArray[np.int64] = boundaries[index]
    return starts


def _local_dates(micros: npt.NDArray[np.int64]) -> list[date]:
    """Every local calendar date a timestamp of the batch can fall on, plus the day before.

    UTC offsets stay within ±1 day, so the UTC dates of the batch widened by one day on each
    side cover every local date; the extra day before guarantees a boundary at or below each row.
    """
    utc_days = np.unique(micros // _MICROS_PER_DAY)
    candidates = np.unique(np.concatenate([utc_days - 2, utc_days - 1, utc_days, utc_days + 1]))
    return [date(1970, 1, 1) + timedelta(days=int(day)) for day in candidates]


def _window_starts(
    dates: list[date], granularity: Granularity, zone: ZoneInfo
) -> npt.NDArray[np.int64]:
    """Sorted, unique UTC starts (epoch micros) of the windows that begin on ``dates``."""
    local_starts: set[datetime] = set()
    for day in dates:
        if granularity == "week":
            local_starts.add(datetime.combine(day - timedelta(days=day.weekday()), time()))
        elif granularity == "day":
            local_starts.add(datetime.combine(day, time()))
        else:
            local_starts.update(datetime.combine(day, time(hour)) for hour in range(24))
    # For a repeated wall time (autumn DST) fold=0 and fold=1 are two instants: each repeated
    # hour is its own hourly window, while a day or week starts at the first occurrence. For a
    # skipped wall time (spring) fold=0 resolves to the transition instant, where the shortened
    # window really starts.
    folds = (0, 1) if granularity == "hour" else (0,)
    instants = {
        datetime_to_micros(wall.replace(tzinfo=zone, fold=fold))
        for wall in local_starts
        for fold in folds
    }
    return np.array(sorted(instants), dtype=np.int64)


_LENGTH_MICROS: Final = {"hour": 3_600_000_000, "day": 86_400_000_000, "week": 604_800_000_000}


def windows_back(micros: int, windows: int, granularity: Granularity, timezone: str) -> int:
    """Start of the window ``windows`` windows before the one holding ``micros``.

    Stepping back a whole number of nominal lengths from the window's start and flooring half a
    length later lands in the right local window: a DST change moves local windows by an hour,
    never by half a window.
    """
    length = _LENGTH_MICROS[granularity]
    current = int(floor_to_windows(np.array([micros], dtype=np.int64), granularity, timezone)[0])
    target = np.array([current - windows * length + length // 2], dtype=np.int64)
    return int(floor_to_windows(target, granularity, timezone)[0])
