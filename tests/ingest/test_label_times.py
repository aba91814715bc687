"""A label's time and source in the pure ingest layer: parsing, defaults, the content hash."""

from __future__ import annotations

import hashlib
from typing import Any, get_args

import msgspec
import numpy as np
import pytest

from app.ingest.errors import BatchValidationError, LabelsValidationError
from app.ingest.labels import parse_labels
from app.ingest.parse import parse_csv, parse_json
from app.ingest.validate import Limits, ValidBatch, validate
from app.monitoring.vocabulary import (
    LABEL_SOURCE_CODES,
    LABEL_SOURCE_NAMES,
    LABEL_SOURCES,
    UNKNOWN_LABEL_SOURCE,
    UNKNOWN_LABEL_TIME,
    LabelSource,
)

LIMITS = Limits(
    max_rows=1_000,
    min_timestamp_micros=946_684_800_000_000,  # 2000-01-01
    max_timestamp_micros=4_102_444_800_000_000,  # 2100-01-01
)
NOON = 1_793_620_800_000_000  # 2026-11-02T12:00:00Z
ROWS: list[dict[str, Any]] = [
    {"id": "a", "timestamp": "2026-11-02T10:00:00Z", "score": 0.9, "label": 1},
    {"id": "b", "timestamp": "2026-11-02T11:00:00Z", "score": 0.1, "label": None},
    {"id": "c", "timestamp": "2026-11-02T12:00:00Z", "score": 0.5, "label": 0},
]


def valid(rows: list[dict[str, Any]]) -> ValidBatch:
    return validate(parse_json(msgspec.json.encode({"batch_id": "x", "rows": rows})), LIMITS)


def test_the_vocabulary_codes_every_source_once() -> None:
    assert set(LABEL_SOURCE_CODES) == set(LABEL_SOURCES) == set(get_args(LabelSource))
    assert sorted(LABEL_SOURCE_CODES.values()) == [1, 2, 3]  # migration 0013's CHECK
    assert {LABEL_SOURCE_NAMES[code]: code for code in LABEL_SOURCE_NAMES} == LABEL_SOURCE_CODES
    assert UNKNOWN_LABEL_SOURCE not in LABEL_SOURCE_NAMES
    assert np.iinfo(np.int64).min == UNKNOWN_LABEL_TIME


def test_a_batch_without_label_fields_hashes_as_before_they_existed() -> None:
    """Batches stored before migration 0013 must still be replays, never 409s."""
    batch = valid(ROWS)
    old = hashlib.sha256()  # the hash as it was computed then
    for strings in (batch.ids, batch.segments):
        old.update(np.array([len(s) for s in strings], dtype=np.int64).tobytes())
        old.update("".join(strings).encode())
    for array in (batch.timestamps, batch.scores, batch.labels):
        old.update(array.tobytes())
    assert batch.content_hash() == old.hexdigest()
    assert (
        "labelled_at"
        not in parse_json(msgspec.json.encode({"batch_id": "x", "rows": ROWS})).columns
    )


def test_what_was_sent_is_hashed_not_the_defaults() -> None:
    plain = valid(ROWS)
    nulls = valid([row | {"labelled_at": None, "source": None} for row in ROWS])
    confirmed = valid([ROWS[0] | {"source": "confirmed"}, *ROWS[1:]])
    assert plain.content_hash() == nulls.content_hash() == confirmed.content_hash()
    timed = valid([ROWS[0] | {"labelled_at": "2026-11-03T00:00:00Z"}, *ROWS[1:]])
    feedback = valid([ROWS[0] | {"source": "feedback"}, *ROWS[1:]])
    hashes = {plain.content_hash(), timed.content_hash(), feedback.content_hash()}
    assert len(hashes) == 3
    # The defaults are filled in per arrival, outside the hash.
    first, second = plain.label_columns(NOON), plain.label_columns(NOON + 1)
    assert first[0].tolist() != second[0].tolist()


def test_defaults_are_the_arrival_never_before_the_row_and_confirmed() -> None:
    rows = [
        ROWS[0] | {"labelled_at": "2026-11-02T10:30:00+00:00", "source": "chargeback"},
        ROWS[1],
        ROWS[2],  # its timestamp is after "now" below: its label is timed at its timestamp
    ]
    times, sources = valid(rows).label_columns(NOON - 3_600_000_000)
    assert times.tolist() == [NOON - 5_400_000_000, UNKNOWN_LABEL_TIME, NOON]
    assert sources.tolist() == [
        LABEL_SOURCE_CODES["chargeback"],
        0,
        LABEL_SOURCE_CODES["confirmed"],
    ]


def test_a_label_time_column_with_gaps_and_odd_values_is_named_by_row() -> None:
    columns = {
        "id": ["a", "b", "c", "d", "e"],
        "timestamp": ["2026-11-02T10:00:00Z"] * 5,
        "score": [0.1] * 5,
        "label": [1, 1, 1, 1, None],
        "labelled_at": [None, "2026-11-02T11:00:00Z", 5, "2026-11-02T09:00:00+00:00", None],
        "source": ["feedback", None, {"x": 1}, "chargeback", "confirmed"],
    }
    body = msgspec.json.encode({"batch_id": "x", "columns": columns})
    with pytest.raises(BatchValidationError) as refused:
        validate(parse_json(body), LIMITS)
    assert [(d["row"], d["field"]) for d in refused.value.details] == [
        (2, "labelled_at"),
        (2, "source"),
        (3, "labelled_at"),
        (4, "source"),
    ]


def test_a_csv_batch_reads_empty_label_fields_as_none_sent() -> None:
    body = (
        b"id,timestamp,score,label,labelled_at,source\n"
        b"a,2026-11-02T10:00:00Z,0.5,1,2026-11-02T12:00:00Z,feedback\n"
        b"b,2026-11-02T10:00:00Z,0.5,,,\n"
    )
    batch = validate(parse_csv(body, "x"), LIMITS)
    assert batch.labelled_at.tolist() == [NOON, UNKNOWN_LABEL_TIME]
    assert batch.sources.tolist() == [LABEL_SOURCE_CODES["feedback"], UNKNOWN_LABEL_SOURCE]


def test_label_updates_take_time_and_source_and_check_them() -> None:
    entries = [
        {"id": "a", "label": 1, "labelled_at": "2026-11-02T12:00:00Z", "source": "chargeback"},
        {"id": "b", "label": 0, "labelled_at": None},
        {"id": "c", "label": 1, "source": "feedback"},
    ]
    updates = parse_labels(msgspec.json.encode(entries))
    assert updates.labelled_at.tolist() == [NOON, UNKNOWN_LABEL_TIME, UNKNOWN_LABEL_TIME]
    assert updates.sources.tolist() == [2, 0, 1]
    bad = [entries[0] | {"labelled_at": "2026-11-02T12:00:00"}, entries[2] | {"source": "Bank"}]
    with pytest.raises(LabelsValidationError) as refused:
        parse_labels(msgspec.json.encode(bad))
    assert [(d["row"], d["field"]) for d in refused.value.details] == [
        (0, "labelled_at"),
        (1, "source"),
    ]
    with pytest.raises(LabelsValidationError) as late:
        parse_labels(msgspec.json.encode(entries[:1]), latest=NOON - 1)
    assert "now + CALMON_MAX_FUTURE" in late.value.details[0]["message"]


def test_a_label_csv_may_carry_time_and_source_columns() -> None:
    body = b"source,id,label,labelled_at\nchargeback,a,1,2026-11-02T12:00:00Z\n,b,0,\n"
    updates = parse_labels(body, "csv")
    assert (updates.ids, updates.labels.tolist()) == (["a", "b"], [1, 0])
    assert updates.labelled_at.tolist() == [NOON, UNKNOWN_LABEL_TIME]
    assert updates.sources.tolist() == [2, 0]
    with pytest.raises(LabelsValidationError) as refused:
        parse_labels(b"id,label,when\na,1,x\n", "csv")
    assert "optionally labelled_at, source" in refused.value.details[0]["message"]
