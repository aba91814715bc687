"""Window flooring in the model's time zone: DST days, repeated and skipped hours, ISO weeks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ingest.timestamps import micros_to_datetime
from app.ingest.windows import floor_to_windows
from app.monitoring.vocabulary import Granularity


def floor(instants: list[datetime], granularity: Granularity, zone: str) -> list[datetime]:
    micros = np.array(
        [(t - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) for t in instants]
    )
    return [micros_to_datetime(int(m)) for m in floor_to_windows(micros, granularity, zone)]


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_daily_windows_start_at_local_midnight_and_last_23_or_25_hours_across_dst() -> None:
    # Paris: CET (UTC+1) until 2026-03-29 02:00 local, CEST (UTC+2) until 2026-10-25 03:00.
    instants = [utc(2026, 3, 28, 23, 30), utc(2026, 3, 29, 21, 59), utc(2026, 3, 29, 22, 0)]
    assert floor(instants, "day", "Europe/Paris") == [
        utc(2026, 3, 28, 23),  # 00:30 local on the 29th: the 29th began at 23:00 UTC (CET)
        utc(2026, 3, 28, 23),  # 23:59 CEST on the 29th: same day, which lasted 23 hours
        utc(2026, 3, 29, 22),  # 00:00 CEST on the 30th
    ]
    autumn = [utc(2026, 10, 24, 22), utc(2026, 10, 25, 22, 59), utc(2026, 10, 25, 23)]
    assert floor(autumn, "day", "Europe/Paris") == [
        utc(2026, 10, 24, 22),
        utc(2026, 10, 24, 22),  # the 25th lasted 25 hours
        utc(2026, 10, 25, 23),
    ]


def test_hourly_windows_keep_the_repeated_hour_twice_and_skip_the_missing_one() -> None:
    # 2026-10-25 in Paris: 02:00-03:00 local happens twice (00:00 and 01:00 UTC).
    repeated = [utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30), utc(2026, 10, 25, 2, 30)]
    assert floor(repeated, "hour", "Europe/Paris") == [
        utc(2026, 10, 25, 0),
        utc(2026, 10, 25, 1),
        utc(2026, 10, 25, 2),
    ]
    # 2026-03-29: local 02:00-03:00 does not exist; 01:xx CET is 00:xx UTC, 03:xx CEST is 01:xx.
    spring = [utc(2026, 3, 29, 0, 59), utc(2026, 3, 29, 1, 0)]
    assert floor(spring, "hour", "Europe/Paris") == [utc(2026, 3, 29, 0), utc(2026, 3, 29, 1)]


def test_hourly_windows_follow_a_half_hour_zone() -> None:
    assert floor([utc(2026, 11, 2, 10, 10)], "hour", "Asia/Kolkata") == [utc(2026, 11, 2, 9, 30)]


def test_weekly_windows_start_on_monday_local_midnight() -> None:
    # 2026-11-02 is a Monday. Sunday 23:30 UTC is already Monday 00:30 in Paris.
    instants = [utc(2026, 11, 1, 23, 30), utc(2026, 11, 8, 22, 59), utc(2026, 11, 8, 23, 0)]
    assert floor(instants, "week", "Europe/Paris") == [
        utc(2026, 11, 1, 23),
        utc(2026, 11, 1, 23),
        utc(2026, 11, 8, 23),
    ]
    # A week across the spring change starts at 23:00 UTC and ends at 22:00 UTC.
    assert floor([utc(2026, 3, 29, 21)], "week", "Europe/Paris") == [utc(2026, 3, 22, 23)]


def test_a_year_boundary_week_is_the_iso_week() -> None:
    # 2027-01-01 is a Friday: its ISO week began Monday 2026-12-28.
    assert floor([utc(2027, 1, 1, 12)], "week", "UTC") == [utc(2026, 12, 28)]


ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "America/Santiago"]


@settings(max_examples=200, deadline=None)
@given(
    seconds=st.lists(st.integers(1_600_000_000, 1_900_000_000), min_size=1, max_size=20),
    zone=st.sampled_from(ZONES),
    granularity=st.sampled_from(["hour", "day", "week"]),
)
def test_flooring_agrees_with_a_wall_clock_reference(
    seconds: list[int], zone: str, granularity: Granularity
) -> None:
    """Each window start is at or before the instant, and is the local period's first instant."""
    tz = ZoneInfo(zone)
    instants = [datetime.fromtimestamp(s, UTC) for s in seconds]
    for instant, start in zip(instants, floor(instants, granularity, zone), strict=True):
        assert start <= instant
        local = instant.astimezone(tz)
        local_start = start.astimezone(tz)
        if granularity == "hour":
            assert instant - start < timedelta(hours=1)
            assert local_start.second == 0
            if local_start.minute:  # Lord Howe's half-hour DST: the hour begins at the jump
                assert (start - timedelta(microseconds=1)).astimezone(tz).hour != local_start.hour
        else:
            expected_date = local.date()
            if granularity == "week":
                expected_date -= timedelta(days=local.weekday())
            assert local_start.date() == expected_date
            # Nothing of that date exists before the window start.
            assert (start - timedelta(microseconds=1)).astimezone(tz).date() < expected_date


@pytest.mark.parametrize("granularity", ["minute", "month"])
def test_unknown_granularity_is_refused(granularity: str) -> None:
    with pytest.raises(ValueError, match="granularity"):
        floor_to_windows(np.array([0]), granularity, "UTC")  # type: ignore[arg-type]
