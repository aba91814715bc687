"""What the client says when it cannot do what was asked (issue 26, point 2): a refusal's text
lists its first problems, bounded; metrics_frame without pandas names the extra to install."""

from __future__ import annotations

import sys

import pytest

from app.client import CalmonAPIError, CalmonClient
from app.client.errors import MAX_PROBLEM_CHARS


def test_a_refusal_lists_its_first_problems_each_bounded() -> None:
    details: list[dict[str, object]] = [{"field": "batch_id", "message": "is required"}]
    details += [{"row": row, "field": "id", "message": "x" * 1_000} for row in range(30)]
    body = {"error": {"code": "invalid_batch", "message": "batch refused", "details": details}}
    error = CalmonAPIError(422, body)
    lines = str(error).split("\n")
    assert lines[0] == "HTTP 422 invalid_batch: batch refused"
    assert lines[1] == "  batch_id: is required"
    assert lines[2].startswith("  row 0, id: xxx")
    assert lines[2].endswith("...")
    assert max(map(len, lines)) <= MAX_PROBLEM_CHARS + 2
    assert lines[-1] == "  ... 26 more in .details"
    assert error.summary == lines[0]
    assert len(error.details) == 31


def test_a_refusal_without_problems_is_its_message() -> None:
    error = CalmonAPIError(404, {"error": {"code": "not_found", "message": "no model named x"}})
    assert str(error) == "HTTP 404 not_found: no model named x"


def test_metrics_frame_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # what Python does when it is not installed
    with (
        CalmonClient("http://127.0.0.1:9") as client,
        pytest.raises(ImportError, match=r"pip install 'calmon\[pandas\]'"),
    ):
        client.metrics_frame("m", "average_precision")
