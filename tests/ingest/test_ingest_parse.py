"""Parsing and validation of batch bodies, without a database."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.errors import PayloadTooLargeError
from app.ingest.body import BodyLimits, decode_body, parse_body
from app.ingest.errors import (
    BatchValidationError,
    LabelsValidationError,
    UnsupportedMediaTypeError,
)
from app.ingest.labels import parse_labels
from app.ingest.nonfinite import NAMED_UP_TO
from app.ingest.parse import RawBatch, _columns_from_rows, parse_csv, parse_json
from app.ingest.timestamps import parse_timestamps
from app.ingest.validate import NO_LABEL, Limits, ValidBatch, validate

LIMITS = Limits(
    max_rows=1_000,
    min_timestamp_micros=946_684_800_000_000,  # 2000-01-01
    max_timestamp_micros=4_102_444_800_000_000,  # 2100-01-01
)
ROWS: list[dict[str, Any]] = [
    {"id": "a", "timestamp": "2026-11-02T10:00:00Z", "score": 0.9, "label": 1, "segment": "FR"},
    {"id": "b", "timestamp": "2026-11-02T11:00:00+01:00", "score": 0.1, "label": None},
    {"id": "c", "timestamp": "2026-11-02 10:00:00.250000+00:00", "score": 1, "label": 0},
]


def errors_of(
    error: pytest.ExceptionInfo[BatchValidationError] | pytest.ExceptionInfo[LabelsValidationError],
) -> list[tuple[Any, ...]]:
    return [(d.get("row"), d["field"]) for d in error.value.details]


def valid(body: dict[str, Any]) -> ValidBatch:
    return validate(parse_json(msgspec.json.encode(body)), LIMITS)


def test_timestamps_need_an_offset_and_are_exact_to_the_microsecond() -> None:
    parsed = parse_timestamps(
        ["2026-11-02T10:00:00.000001Z", "2026-11-02T11:00:00+01:00", 1_793_613_600, 1.5]
    )
    assert parsed.errors == []
    assert parsed.micros.tolist() == [
        1_793_613_600_000_001,
        1_793_613_600_000_000,
        1_793_613_600_000_000,
        1_500_000,
    ]
    bad = parse_timestamps(["2026-11-02T10:00:00Z", "2026-11-02T10:00:00", "soon", None, True])
    assert [row for row, _ in bad.errors] == [1, 2, 3, 4]
    assert "no UTC offset" in bad.errors[0][1]


def test_row_and_columnar_json_and_csv_give_the_same_canonical_content() -> None:
    from_rows = valid({"batch_id": "x", "rows": ROWS})
    columns = {
        name: [row.get(name) for row in ROWS]
        for name in ("id", "timestamp", "score", "label", "segment")
    }
    from_columns = valid({"batch_id": "x", "columns": columns})
    csv_text = "id,timestamp,score,label\n" + "\n".join(
        f"{r['id']},{r['timestamp']},{r['score']},{'' if r['label'] is None else r['label']}"
        for r in ROWS
    )
    from_csv = validate(parse_csv(csv_text.encode(), "x"), LIMITS)
    assert from_rows.content_hash() == from_columns.content_hash() != ""
    # CSV has no segment column here, so every row is "all": a different content.
    assert from_csv.segments == ["all"] * 3
    assert from_csv.timestamps.tolist() == from_rows.timestamps.tolist()
    assert from_rows.labels.tolist() == [1, NO_LABEL, 0]
    assert from_rows.segments == ["FR", "all", "all"]
    changed = valid({"batch_id": "x", "rows": [*ROWS[:2], {**ROWS[2], "score": 0.99}]})
    assert changed.content_hash() != from_rows.content_hash()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"not json", "body"),
        (b"[1, 2]", "body"),
        (b'{"rows": []}', "batch_id"),
        (b'{"batch_id": "x", "rows": [], "columns": {}}', "rows"),
        (b'{"batch_id": "x", "rows": [], "extra": 1}', "extra"),
        (b'{"batch_id": "x", "columns": {"id": ["a"], "timestamp": []}}', "score"),
        (b'{"batch_id": "x", "columns": {"id": ["a"], "timestamp": [], "score": [1]}}', "columns"),
        (b'{"batch_id": "x", "columns": {"id": "a", "timestamp": [], "score": [1]}}', "columns.id"),
    ],
)
def test_shape_errors_name_the_field(body: bytes, field: str) -> None:
    with pytest.raises(BatchValidationError) as error:
        validate(parse_json(body), LIMITS)
    assert errors_of(error) == [(None, field)]


def test_every_bad_row_is_counted_and_the_first_twenty_listed_in_row_order() -> None:
    rows = [dict(ROWS[0], id=f"r{i}") for i in range(100)]
    for row in rows[50:]:
        row["score"] = "high"
    for row in rows[40:45]:
        row["label"] = 3
    rows[41]["id"] = "r0"
    with pytest.raises(BatchValidationError) as error:
        valid({"batch_id": "x", "rows": rows})
    assert error.value.extra["error_count"] == 56
    listed = errors_of(error)
    assert len(listed) == 20
    assert listed[:4] == [(40, "label"), (41, "id"), (41, "label"), (42, "label")]
    assert listed[6:8] == [(50, "score"), (51, "score")]


def test_ids_segments_scores_and_labels_are_checked() -> None:
    rows = [
        dict(ROWS[0], id=""),
        dict(ROWS[0], id="x" * 201),
        dict(ROWS[0], id=7),
        dict(ROWS[0], id="ok1", segment=""),
        dict(ROWS[0], id="ok2", score=True),
        dict(ROWS[0], id="ok3", label=True),
        dict(ROWS[0], id="ok4", label=0.5),
        dict(ROWS[0], id="ok5", timestamp="1999-12-31T23:59:59Z"),
    ]
    with pytest.raises(BatchValidationError) as error:
        valid({"batch_id": "x", "rows": rows})
    assert errors_of(error) == [
        (0, "id"),
        (1, "id"),
        (2, "id"),
        (3, "segment"),
        (4, "score"),
        (5, "label"),
        (6, "label"),
        (7, "timestamp"),
    ]


def test_float_labels_from_dataframes_are_accepted() -> None:
    batch = valid(
        {
            "batch_id": "x",
            "columns": {
                "id": ["a", "b"],
                "timestamp": [1e9, 1e9],
                "score": [0.1, 0.2],
                "label": [1.0, None],
            },
        }
    )
    assert batch.labels.tolist() == [1, NO_LABEL]


def test_csv_rows_of_the_wrong_width_are_named() -> None:
    with pytest.raises(BatchValidationError) as error:
        parse_csv(b"id,timestamp,score\na,2026-11-02T10:00:00Z,0.5\nb,2026-11-02T10:00:00Z\n", "x")
    assert errors_of(error) == [(1, "row")]
    with pytest.raises(BatchValidationError) as error:
        parse_csv(b"id,timestamp,scor\n", "x")
    assert errors_of(error) == [(None, "scor")]


def test_csv_needs_a_batch_id_from_outside_the_body() -> None:
    with pytest.raises(BatchValidationError) as error:
        parse_csv(b"id,timestamp,score\na,2026-11-02T10:00:00Z,0.5\n", None)
    assert errors_of(error) == [(None, "batch_id")]


def test_gzip_is_decoded_and_capped_after_decompression() -> None:
    body = msgspec.json.encode({"batch_id": "x", "rows": ROWS})

    def capped(max_bytes: int) -> BodyLimits:
        return BodyLimits(max_bytes=max_bytes, max_rows=1_000)

    assert decode_body(gzip.compress(body), "gzip", capped(len(body))) == body
    split = gzip.compress(body[:10]) + gzip.compress(body[10:])
    assert decode_body(split, "GZIP", capped(10**6)) == body
    with pytest.raises(PayloadTooLargeError):
        decode_body(gzip.compress(body), "gzip", capped(len(body) - 1))
    bomb = gzip.compress(b"0" * 50_000_000)
    assert len(bomb) < 100_000
    with pytest.raises(PayloadTooLargeError):
        decode_body(bomb, "gzip", capped(1_000_000))
    with pytest.raises(UnsupportedMediaTypeError):
        decode_body(gzip.compress(body)[:-20], "gzip", capped(10**6))
    with pytest.raises(UnsupportedMediaTypeError):
        decode_body(body, "br", capped(10**6))


def test_content_types_are_dispatched_and_others_refused() -> None:
    body = msgspec.json.encode({"batch_id": "x", "rows": ROWS})
    assert isinstance(parse_body(body, "application/json; charset=utf-8", None), RawBatch)
    with pytest.raises(UnsupportedMediaTypeError):
        parse_body(body, "application/x-parquet", None)
    with pytest.raises(UnsupportedMediaTypeError):
        parse_body(body, None, None)


def test_label_updates_are_validated_entry_by_entry() -> None:
    one = parse_labels(b'{"labels": [{"id": "a", "label": 1}]}')
    assert (one.ids, one.labels.tolist()) == (["a"], [1])
    bare = parse_labels(b'[{"id": "a", "label": 0}]')
    assert (bare.ids, bare.labels.tolist()) == (["a"], [0])
    with pytest.raises(LabelsValidationError) as error:
        parse_labels(
            b'[{"id": "a", "label": 1}, {"id": "a", "label": 0}, '
            b'{"id": "b", "label": null}, {"id": "c"}]'
        )
    assert errors_of(error) == [(1, "id"), (2, "label"), (3, "row")]


def test_now_bounds_come_from_the_limits() -> None:
    future = datetime(2200, 1, 1, tzinfo=UTC).isoformat()
    with pytest.raises(BatchValidationError) as error:
        valid({"batch_id": "x", "rows": [dict(ROWS[0], timestamp=future)]})
    assert errors_of(error) == [(0, "timestamp")]


@settings(max_examples=100, deadline=None)
@given(
    instants=st.lists(
        st.datetimes(
            min_value=datetime(1990, 1, 1),
            max_value=datetime(2150, 1, 1),
            timezones=st.sampled_from(
                [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=7))]
            ),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_the_column_parse_is_exact_to_the_microsecond(instants: list[datetime]) -> None:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    expected = [(t - epoch) // timedelta(microseconds=1) for t in instants]
    assert parse_timestamps([t.isoformat() for t in instants]).micros.tolist() == expected


def test_nan_is_named_by_row_except_in_a_body_too_large_to_parse_twice() -> None:
    row = b'{"id":"a","timestamp":1793000000,"score":NaN}'
    small = b'{"batch_id":"b","rows":[' + row + b"]}"
    with pytest.raises(BatchValidationError) as named:
        parse_json(small)
    assert [(d["row"], d["field"]) for d in named.value.details] == [(0, "score")]
    padding = b" " * (NAMED_UP_TO - len(small) + 1)
    with pytest.raises(BatchValidationError) as unnamed:
        parse_json(small + padding)
    assert "not valid JSON" in unnamed.value.details[0]["message"]


@pytest.mark.parametrize(
    "body",
    [b'{"batch_id": "b", "rows": [' * 5_000, b'{"batch_id": "b\xff", "rows": []}', b"[1e999]"],
)
def test_deep_non_utf8_or_out_of_range_json_is_a_422(body: bytes) -> None:
    with pytest.raises(BatchValidationError) as refused:
        parse_json(body)
    assert "not valid JSON" in refused.value.details[0]["message"]


def test_a_csv_past_the_row_limit_is_refused_before_the_rest_is_read() -> None:
    lines = b"id,timestamp,score\n" + b"a,2026-11-02T10:00:00Z,0.5\n" * 3
    unreadable = b"\xff\n"  # would be a 422 if it were read
    parse_csv(lines, "x", max_rows=3)
    with pytest.raises(PayloadTooLargeError, match="more than 2 lines"):
        parse_csv(lines + unreadable, "x", max_rows=2)
    labels = b"id,label\n" + b"a,1\n" * 3 + unreadable
    with pytest.raises(PayloadTooLargeError, match="CALMON_MAX_ROWS_PER_REQUEST"):
        parse_labels(labels, "csv", max_rows=2)


def test_csv_lines_of_the_wrong_width_are_all_counted_and_the_first_named() -> None:
    body = b"id,timestamp,score\n" + b"a,b,c,d,e,f\n" * 50 + b"a,2026-11-02T10:00:00Z,0.5\n"
    with pytest.raises(BatchValidationError) as refused:
        parse_csv(body, "x")
    assert refused.value.extra["error_count"] == 50
    assert [d["row"] for d in refused.value.details] == list(range(20))
    assert refused.value.details[0]["message"] == "has 6 fields, the header has 3"


def test_a_label_update_past_the_row_limit_is_refused_before_its_entries_are_checked() -> None:
    entries = [{"id": "a", "label": 7}] * 3  # every entry invalid: a 422 if they were checked
    with pytest.raises(PayloadTooLargeError, match="3 entries; at most 2"):
        parse_labels(msgspec.json.encode(entries), "json", max_rows=2)


def test_every_bad_label_entry_is_counted_and_the_first_twenty_listed() -> None:
    entries = [{"id": f"x{i}", "label": 7} for i in range(500)]
    with pytest.raises(LabelsValidationError) as refused:
        parse_labels(msgspec.json.encode(entries), "json", max_rows=1_000)
    assert refused.value.extra["error_count"] == 500
    assert [d["row"] for d in refused.value.details] == list(range(20))


_ROW_BODIES = [
    [{"id": "a", "timestamp": "t", "score": 0.5, "label": 1, "segment": "FR", "amount": 3.5}],
    [{"id": "a", "timestamp": "t", "score": 0.5}, {"id": "b", "timestamp": "t", "score": 1}],
    [  # an optional field in one row only, label and segment in some
        {"id": "a", "timestamp": "t", "score": 0.1, "entity": "card-1", "label": None},
        {"id": "b", "timestamp": "t", "score": 0.2, "segment": "DE", "labelled_at": "x"},
    ],
    [{"id": "a", "timestamp": "t", "score": 0.3, "amount": None, "source": None}],  # null sent
    [{"id": "a", "timestamp": "t", "score": [1, {"x": 2}]}],  # values are checked later
    [],
    [{"id": 7, "timestamp": 1.5e9, "score": "0.4", "label": True, "entity": "é" * 3}],
]


@pytest.mark.parametrize("rows", _ROW_BODIES)
def test_row_objects_become_the_columns_the_dicts_did(rows: list[dict[str, Any]]) -> None:
    """Well-formed row JSON is decoded into row objects, not dicts: the columns (names, order,
    values, absent and null alike) are those the dicts gave (the path kept for everything else)."""
    _assert_same_columns(msgspec.json.encode({"batch_id": "b1", "rows": rows}))


def test_a_key_sent_twice_in_a_row_keeps_its_last_value_as_with_dicts() -> None:
    _assert_same_columns(b'{"batch_id":"b1","rows":[{"id":"a","id":"b","timestamp":1,"score":2}]}')


def _assert_same_columns(body: bytes) -> None:
    parsed = parse_json(body)
    as_dicts = _columns_from_rows(msgspec.json.decode(body)["rows"])
    assert parsed.batch_id == "b1"
    assert list(parsed.columns) == list(as_dicts)
    assert parsed.columns == as_dicts
