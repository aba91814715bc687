"""A row's optional amount and entity (issue 24) through parsing and validation, without a
database: every format gives the same columns, every bad value is named by row and field, and
a batch without them (or with only nulls) is the batch it was before they existed."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import numpy as np
import pytest

from app.ingest.errors import BatchValidationError
from app.ingest.parse import parse_csv, parse_json
from app.ingest.row_fields import AMOUNT_RULE, ENTITY_RULE, NO_ENTITY
from app.ingest.validate import Limits, ValidBatch, validate
from app.input_rules import MAX_ENTITY_LENGTH, NUL_MESSAGE

LIMITS = Limits(
    max_rows=1_000,
    min_timestamp_micros=946_684_800_000_000,  # 2000-01-01
    max_timestamp_micros=4_102_444_800_000_000,  # 2100-01-01
)
BASE: list[dict[str, Any]] = [
    {"id": "a", "timestamp": "2026-11-02T10:00:00Z", "score": 0.9, "label": 1},
    {"id": "b", "timestamp": "2026-11-02T10:01:00Z", "score": 0.1, "label": None},
    {"id": "c", "timestamp": "2026-11-02T10:02:00Z", "score": 0.5, "label": 0},
]


def with_fields(amounts: list[Any], entities: list[Any]) -> list[dict[str, Any]]:
    return [
        {**row, "amount": amount, "entity": entity}
        for row, amount, entity in zip(BASE, amounts, entities, strict=True)
    ]


def valid(body: dict[str, Any]) -> ValidBatch:
    return validate(parse_json(msgspec.json.encode(body)), LIMITS)


def columns_of(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {name: [row.get(name) for row in rows] for name in rows[0]}


def csv_of(rows: list[dict[str, Any]]) -> bytes:
    names = list(rows[0])
    lines = [",".join(names)]
    lines += [",".join("" if row[n] is None else str(row[n]) for n in names) for row in rows]
    return ("\n".join(lines) + "\n").encode()


def refusals(body: bytes, *, csv: bool = False) -> list[tuple[int | None, str, str]]:
    with pytest.raises(BatchValidationError) as refused:
        validate(parse_csv(body, "x") if csv else parse_json(body), LIMITS)
    return [(d.get("row"), d["field"], d["message"]) for d in refused.value.details]


def test_row_columnar_and_csv_give_the_same_amounts_and_entities() -> None:
    rows = with_fields([12.5, None, 3], ["card-1", None, "acct 9"])
    from_rows = valid({"batch_id": "x", "rows": rows})
    from_columns = valid({"batch_id": "x", "columns": columns_of(rows)})
    from_csv = validate(parse_csv(csv_of(rows), "x"), LIMITS)
    for batch in (from_rows, from_columns, from_csv):
        assert batch.amounts is not None
        assert batch.amounts.tolist()[0::2] == [12.5, 3.0]
        assert math.isnan(batch.amounts[1])  # none sent
        assert batch.entities == ["card-1", NO_ENTITY, "acct 9"]
    assert from_rows.content_hash() == from_columns.content_hash() == from_csv.content_hash()


def test_a_batch_without_them_or_with_only_nulls_is_the_batch_it_was() -> None:
    """Absent and all-null columns are not sent: no column, and the hash a batch stored before
    the fields existed has (so its replay is still a replay)."""
    before = valid({"batch_id": "x", "rows": BASE})
    nulls = valid({"batch_id": "x", "rows": with_fields([None] * 3, [None] * 3)})
    empty_csv = validate(parse_csv(csv_of(with_fields([None] * 3, [None] * 3)), "x"), LIMITS)
    for batch in (before, nulls, empty_csv):
        assert batch.amounts is None
        assert batch.entities is None
        assert batch.content_hash() == before.content_hash()


def test_amounts_and_entities_count_in_the_content_hash() -> None:
    rows = with_fields([1.0, 2.0, 3.0], ["e1", "e2", "e3"])
    sent = valid({"batch_id": "x", "rows": rows}).content_hash()
    assert sent != valid({"batch_id": "x", "rows": BASE}).content_hash()
    changed_amount = with_fields([1.0, 2.5, 3.0], ["e1", "e2", "e3"])
    changed_entity = with_fields([1.0, 2.0, 3.0], ["e1", "e2", "e4"])
    moved_entity = with_fields([1.0, 2.0, 3.0], ["e1e2", None, "e3"])  # same characters
    for other in (changed_amount, changed_entity, moved_entity):
        assert valid({"batch_id": "x", "rows": other}).content_hash() != sent
    # An integer amount is the number it says; -0 is 0.
    integers = with_fields([1, 2, 3], ["e1", "e2", "e3"])
    assert valid({"batch_id": "x", "rows": integers}).content_hash() == sent
    zero = valid({"batch_id": "x", "rows": with_fields([-0.0, 0, 0.0], [None] * 3)})
    assert zero.amounts is not None
    assert np.signbit(zero.amounts).tolist() == [False] * 3


BAD_AMOUNTS: list[Any] = [-0.01, True, "12", [1], {"v": 1}, 10**400]
BAD_ENTITIES: list[Any] = ["", "  ", "x" * (MAX_ENTITY_LENGTH + 1), 42, True, ["c"], 1.5]


@pytest.mark.parametrize("value", BAD_AMOUNTS)
@pytest.mark.parametrize("shape", ["rows", "columns"])
def test_a_bad_amount_is_named_by_row_and_field(value: Any, shape: str) -> None:
    rows = with_fields([1.0, value, None], [None] * 3)
    body = {"batch_id": "x", shape: rows if shape == "rows" else columns_of(rows)}
    # An integer past 64 bits, written by the standard library as any client might.
    assert refusals(json.dumps(body).encode()) == [(1, "amount", AMOUNT_RULE)]


@pytest.mark.parametrize("value", BAD_ENTITIES)
@pytest.mark.parametrize("shape", ["rows", "columns"])
def test_a_bad_entity_is_named_by_row_and_field(value: Any, shape: str) -> None:
    rows = with_fields([None] * 3, ["card-1", None, value])
    body = {"batch_id": "x", shape: rows if shape == "rows" else columns_of(rows)}
    assert refusals(msgspec.json.encode(body)) == [(2, "entity", ENTITY_RULE)]


def test_an_entity_of_only_strings_is_checked_column_wise_too() -> None:
    """The fast path (every value a string) names the same rows as the row-by-row one."""
    entities = ["card-1", "", " \t", "x" * (MAX_ENTITY_LENGTH + 1), "x" * MAX_ENTITY_LENGTH]
    rows = [{**BASE[0], "id": f"r{i}", "entity": e} for i, e in enumerate(entities)]
    rows.append({**BASE[0], "id": "nul", "entity": "a\x00b"})
    assert refusals(msgspec.json.encode({"batch_id": "x", "rows": rows})) == [
        (1, "entity", ENTITY_RULE),
        (2, "entity", ENTITY_RULE),
        (3, "entity", ENTITY_RULE),
        (5, "entity", NUL_MESSAGE),
    ]


def test_non_finite_amounts_are_named_in_json_and_csv() -> None:
    body = b'{"batch_id":"b","rows":[{"id":"a","timestamp":1793000000,"score":1,"amount":NaN}]}'
    assert [(row, field) for row, field, _ in refusals(body)] == [(0, "amount")]
    rows = with_fields(["nan", "inf", "-1"], ["e", "e", "e"])
    assert refusals(csv_of(rows), csv=True) == [
        (0, "amount", AMOUNT_RULE),
        (1, "amount", AMOUNT_RULE),
        (2, "amount", AMOUNT_RULE),
    ]


def test_csv_empty_fields_are_none_sent_and_text_is_refused() -> None:
    body = (
        b"id,timestamp,score,amount,entity\n"
        b"a,2026-11-02T10:00:00Z,0.1,,\nb,2026-11-02T10:00:00Z,0.2, ,x\n"
    )
    batch = validate(parse_csv(body, "x"), LIMITS)
    assert batch.amounts is None  # no row sent one: the column is not written
    assert batch.entities == [NO_ENTITY, "x"]
    bad = b"id,timestamp,score,amount,entity\na,2026-11-02T10:00:00Z,0.1,12 EUR,c\n"
    assert refusals(bad, csv=True) == [(0, "amount", AMOUNT_RULE)]


def test_every_problem_of_a_batch_is_reported_together() -> None:
    rows = with_fields([-1, 2.0, None], [None, "", "ok"])
    rows[2]["score"] = "high"
    assert [
        (row, field)
        for row, field, _ in refusals(msgspec.json.encode({"batch_id": "x", "rows": rows}))
    ] == [
        (0, "amount"),
        (1, "entity"),
        (2, "score"),
    ]
