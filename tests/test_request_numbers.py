"""A number is a JSON number in every request body (issue 26): a string holding one is refused
naming where it is, in a field, an array or a tuple of an array, as a string score is refused
by ingestion; a field that also takes text keeps taking it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.schemas.analyses import RangeIn, TrajectoryIn
from app.schemas.models import ModelCreate


def _where(error: pytest.ExceptionInfo[ValidationError]) -> list[tuple[str | int, ...]]:
    return [tuple(problem["loc"]) for problem in error.value.errors()]


def test_strings_for_numbers_are_refused_where_they_are() -> None:
    with pytest.raises(ValidationError) as top:
        ModelCreate.model_validate({"name": "m", "threshold": "0.5"})
    assert _where(top) == [("threshold",)]
    assert "must be a JSON number, not a string" in str(top.value)
    with pytest.raises(ValidationError) as nested:
        RangeIn.model_validate({"weight": [[0.01, 1.0], [0.02, "2"]]})
    assert _where(nested) == [("weight", 1, 1)]
    with pytest.raises(ValidationError) as points:
        TrajectoryIn.model_validate({"points": [["0", 0.01], [1, 0.02]]})
    assert _where(points) == [("points", 0, 0)]


def test_numbers_and_text_fields_are_taken_as_before() -> None:
    created = ModelCreate.model_validate({"name": "m", "threshold": 1, "timezone": "UTC"})
    assert created.threshold == 1.0
    assert TrajectoryIn.model_validate({"points": [[0, 0.01], [1.5, 0.02]]}).points[1] == (
        1.5,
        0.02,
    )
