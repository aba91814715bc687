"""Columns as the client sends them: timestamps in UTC with Z, missing labels as null."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import numpy as np
import pandas as pd
import pytest

from app.client.columns import (
    Chunk,
    amount_column,
    array_chunks,
    column_json,
    entity_column,
    label_column,
    label_entries,
    label_time_column,
    segment_column,
    source_column,
    timestamp_column,
)


def _json(values: object) -> object:
    """What the server receives for a column."""
    return msgspec.json.decode(column_json(timestamp_column(values)))


def test_timestamps_of_every_kind_become_utc_text_or_seconds() -> None:
    paris = pd.to_datetime(
        ["2026-01-05 23:30:00", "2026-07-05 23:30:00.25"], format="ISO8601"
    ).tz_localize("Europe/Paris")
    expected = ["2026-01-05T22:30:00Z", "2026-07-05T21:30:00.250000Z"]
    assert _json(paris) == expected  # a DatetimeIndex, microsecond resolution
    assert _json(pd.Series(paris)) == expected
    assert _json(pd.Series(paris).dt.as_unit("ns")) == expected
    naive = np.array(["2026-01-05T22:30"], dtype="datetime64[m]")
    assert _json(naive) == ["2026-01-05T22:30:00Z"]  # numpy: read as UTC
    aware = [datetime(2026, 1, 5, 22, 30, tzinfo=UTC)]
    assert _json(aware) == ["2026-01-05T22:30:00+00:00"]
    assert _json(np.array([1_767_652_200])) == [1_767_652_200]
    with pytest.raises(ValueError, match="NaT"):
        timestamp_column(np.array(["2026-01-05", "NaT"], dtype="datetime64[us]"))


def test_missing_labels_and_segments_are_null() -> None:
    assert label_column([0, 1.0, None, float("nan")]) == [0, 1, None, None]
    assert label_column(np.array([1.0, np.nan, 0.0])) == [1, None, 0]
    assert label_column(pd.array([1, None], dtype="Int8")) == [1, None]
    assert segment_column(["web", None, np.nan]) == ["web", None, None]


def test_a_label_other_than_0_or_1_goes_as_it_is_for_the_server_to_refuse() -> None:
    # int(0.5) would have been 0: a wrong label sent silently.
    assert label_column([1, 0.5, None]) == [1, "0.5", None]
    assert label_column([0, 2]) == [0, "2"]
    assert label_column([1, "yes"]) == [1, "yes"]
    assert label_column([float("inf")]) == ["inf"]


def test_scores_go_as_numbers_and_non_finite_ones_as_null() -> None:
    assert msgspec.json.decode(column_json(np.array([0.25, np.nan, np.inf]))) == [0.25, None, None]
    assert column_json([np.float64(0.5), np.int8(1), None]) == b"[0.5,1,null]"  # numpy scalars


def test_arrays_are_cut_in_batches_converted_as_taken() -> None:
    arrays = {
        "id": pd.Series([f"tx-{i}" for i in range(5)], index=[9, 8, 7, 6, 5]),
        "timestamp": np.arange(5).astype("datetime64[s]"),
        "score": [0.1, 0.2, 0.3, 0.4, 0.5],
        "label": None,
        "segment": (s for s in "abcde"),  # any iterable
    }
    chunks = list(array_chunks(arrays, 2))
    assert [chunk.first for chunk in chunks] == [0, 2, 4]
    assert [chunk.rows for chunk in chunks] == [2, 2, 1]
    assert chunks[1].columns["id"] == ["tx-2", "tx-3"]  # by position, not by the index
    assert set(chunks[0].columns) == {"id", "timestamp", "score", "segment"}
    assert isinstance(chunks[2], Chunk)
    assert msgspec.json.decode(column_json(chunks[2].columns["timestamp"])) == [
        "1970-01-01T00:00:04Z"
    ]
    with pytest.raises(ValueError, match="different lengths"):
        next(array_chunks({"id": [1, 2], "timestamp": [1], "score": [1, 2]}, 2))


def test_label_times_go_as_utc_text_and_missing_ones_as_null() -> None:
    naive = np.array(["2026-01-05T22:30", "NaT"], dtype="datetime64[m]")
    assert label_time_column(naive) == ["2026-01-05T22:30:00.000000Z", None]
    whole = np.array(["2026-01-05T22:30"], dtype="datetime64[s]")
    assert msgspec.json.decode(column_json(label_time_column(whole))) == ["2026-01-05T22:30:00Z"]
    paris = pd.Series(pd.to_datetime(["2026-01-05 23:30", None]).tz_localize("Europe/Paris"))
    assert label_time_column(paris) == ["2026-01-05T22:30:00.000000Z", None]
    aware = datetime(2026, 1, 5, 22, 30, tzinfo=UTC)
    assert label_time_column([aware, None, "2026-01-06T00:00:00+01:00", float("nan")]) == [
        "2026-01-05T22:30:00+00:00",
        None,
        "2026-01-06T00:00:00+01:00",
        None,
    ]
    assert label_time_column([1_767_652_200]) == [1_767_652_200]  # for the server to refuse
    assert source_column(["chargeback", None, np.nan, pd.NA]) == ["chargeback", None, None, None]


def test_label_entries_leave_out_the_times_and_sources_not_given() -> None:
    arrays = {
        "id": ["a", "b", "c"],
        "label": [1, 0, None],
        "labelled_at": np.array(["2026-01-05T10:00", "NaT", "NaT"], dtype="datetime64[us]"),
        "source": ["chargeback", None, None],
    }
    [chunk] = array_chunks(arrays, 10)
    assert label_entries(chunk) == [
        {
            "id": "a",
            "label": 1,
            "labelled_at": "2026-01-05T10:00:00.000000Z",
            "source": "chargeback",
        },
        {"id": "b", "label": 0},
        {"id": "c", "label": None},  # refused by the server, naming the entry
    ]
    [plain] = array_chunks({"id": ["a"], "label": [1], "labelled_at": None, "source": None}, 10)
    assert label_entries(plain) == [{"id": "a", "label": 1}]


def _sent(column: object) -> object:
    """What the server receives for a converted column."""
    return msgspec.json.decode(column_json(column))  # type: ignore[arg-type]


def test_amounts_go_as_numbers_missing_ones_as_null_and_odd_ones_as_they_are() -> None:
    finite = amount_column([12.5, 0, 3])
    assert isinstance(finite, np.ndarray)  # every value finite: one float64 array
    assert _sent(finite) == [12.5, 0.0, 3.0]
    assert _sent(amount_column(np.array([1.5, np.nan]))) == [1.5, None]
    assert _sent(amount_column(pd.Series([2.0, None]))) == [2.0, None]
    assert _sent(amount_column(pd.array([7, None], dtype="Float64"))) == [7.0, None]
    # Refused by the server by row, not turned into numbers here: True is not 1 euro.
    assert _sent(amount_column([1.0, np.inf, -2.0])) == [1.0, "inf", -2.0]
    assert _sent(amount_column([1.0, True])) == [1.0, True]
    assert _sent(amount_column(np.array([True, False]))) == [True, False]
    assert _sent(amount_column([1.0, "12 EUR", None])) == [1.0, "12 EUR", None]


def test_entities_go_as_text_and_missing_ones_as_null() -> None:
    assert entity_column(["card-1", None, np.nan, 4_111_111_111_111_111]) == [
        "card-1",
        None,
        None,
        "4111111111111111",
    ]
    assert entity_column(pd.Series(["a", None])) == ["a", None]


def test_amounts_and_entities_travel_with_their_rows_and_absent_ones_are_not_sent() -> None:
    arrays = {
        "id": ["a", "b", "c"],
        "timestamp": np.arange(3).astype("datetime64[s]"),
        "score": np.array([0.1, 0.2, 0.3]),
        "amount": [10.0, None, 30.0],
        "entity": ["c1", "c2", None],
        "segment": None,
    }
    first, second = array_chunks(arrays, 2)
    assert _sent(first.columns["amount"]) == [10.0, None]
    assert second.columns["entity"] == [None]
    assert set(first.columns) == {"id", "timestamp", "score", "amount", "entity"}
