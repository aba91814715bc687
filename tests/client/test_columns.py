"""Columns as the client sends them: timestamps in UTC with Z, missing labels as null."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pandas as pd

from app.client.columns import label_column, segment_column, timestamp_column


def test_timestamps_of_every_kind_become_utc_text_or_seconds() -> None:
    paris = pd.to_datetime(["2026-01-05 23:30", "2026-07-05 23:30"]).tz_localize("Europe/Paris")
    expected = ["2026-01-05T22:30:00.000000Z", "2026-07-05T21:30:00.000000Z"]
    assert timestamp_column(paris) == expected  # a DatetimeIndex, microsecond resolution
    assert timestamp_column(pd.Series(paris)) == expected
    assert timestamp_column(pd.Series(paris).dt.as_unit("ns")) == expected
    naive = np.array(["2026-01-05T22:30"], dtype="datetime64[m]")
    assert timestamp_column(naive) == ["2026-01-05T22:30:00.000000Z"]  # numpy: read as UTC
    aware = [datetime(2026, 1, 5, 22, 30, tzinfo=UTC)]
    assert timestamp_column(aware) == ["2026-01-05T22:30:00+00:00"]
    assert timestamp_column(np.array([1_767_652_200])) == [1_767_652_200]


def test_missing_labels_and_segments_are_null() -> None:
    assert label_column([0, 1.0, None, float("nan")]) == [0, 1, None, None]
    assert label_column(pd.array([1, None], dtype="Int8")) == [1, None]
    assert segment_column(["web", None, np.nan]) == ["web", None, None]
