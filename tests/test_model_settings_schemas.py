"""A model setting is declared twice: its column of ``models`` and its field of ModelSettings
(issue 15). Registration, update and the public representation derive from ModelSettings, so a
column that one of them lacks is a setting forgotten there; this test finds it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from sqlalchemy import Column, Integer, MetaData, Table

from app.db.tables import MonitoredModel
from app.schemas.models import (
    SETTINGS_FIELDS,
    HistoricalPi0,
    ModelCreate,
    ModelOut,
    ModelPatch,
    pi0_columns,
)

# Columns of `models` that are no setting: identity and bookkeeping. A new one fails the test
# below until it is listed here, so no setting can hide among them.
NOT_SETTINGS = frozenset(
    {"id", "name", "granularity", "timezone", "raw_kept_from", "created_at", "updated_at"}
)
SCHEMAS: tuple[type[BaseModel], ...] = (ModelCreate, ModelPatch, ModelOut)


def settings_of(table: Table) -> set[str]:
    """The schema field of each settings column (the five pi0_* columns are one field, pi0)."""
    pi0 = set(pi0_columns(HistoricalPi0()))
    return {"pi0" if c.name in pi0 else c.name for c in table.columns if c.name not in NOT_SETTINGS}


def forgotten(table: Table, schemas: tuple[type[BaseModel], ...]) -> dict[str, set[str]]:
    """Per schema, the settings columns it has no field for."""
    expected = settings_of(table)
    gaps = {schema.__name__: expected - set(schema.model_fields) for schema in schemas}
    return {name: gap for name, gap in gaps.items() if gap}


def _models_table() -> Table:
    table = MonitoredModel.__table__
    assert isinstance(table, Table)
    return table


def test_every_settings_column_is_in_the_create_patch_and_read_schemas() -> None:
    assert forgotten(_models_table(), SCHEMAS) == {}


def test_every_setting_is_stored_in_a_column() -> None:
    columns = {column.name for column in _models_table().columns}
    assert set(SETTINGS_FIELDS) <= columns
    assert set(pi0_columns(HistoricalPi0())) <= columns


def test_a_column_missing_from_the_schemas_is_reported() -> None:
    """The check can fail: a new settings column without a ModelSettings field."""
    original = _models_table()
    copy = Table(
        "models",
        MetaData(),
        *(Column(column.name, column.type) for column in original.columns),
        Column("new_setting", Integer),
    )
    assert forgotten(copy, SCHEMAS) == {
        "ModelCreate": {"new_setting"},
        "ModelPatch": {"new_setting"},
        "ModelOut": {"new_setting"},
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"min_label_coverage": 1.5}, "less than or equal to 1"),
        ({"detection_drop": 0}, "greater than 0"),
        ({"threshold": float("inf")}, "must be a finite number"),
        ({"review_cost": 1e308}, "less than or equal to 1000000000000000"),
        ({"threshold": None}, "threshold cannot be null"),
        ({"timezone": "UTC"}, "timezone cannot be changed"),
    ],
)
def test_the_patch_schema_keeps_each_settings_rule(body: dict[str, Any], message: str) -> None:
    """PATCH is generated from ModelSettings: the same bounds and validators, and null refused
    where the setting cannot be null."""
    with pytest.raises(ValidationError, match=message):
        ModelPatch.model_validate(body)


def test_the_patch_schema_sends_only_what_was_set() -> None:
    """``null`` removes the alert floor; fields not sent are not in the update."""
    patch = ModelPatch.model_validate({"alert_floor": None, "reference_windows": 7})
    assert patch.model_dump(exclude_unset=True) == {"alert_floor": None, "reference_windows": 7}
