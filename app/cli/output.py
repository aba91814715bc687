"""How the commands print an answer: as JSON, or as a table a terminal reads."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel


def print_json(result: BaseModel | dict[str, Any] | list[Any]) -> None:
    """An answer as indented JSON (a schema by its aliases, as the API writes it)."""
    data = (
        result.model_dump(mode="json", by_alias=True) if isinstance(result, BaseModel) else result
    )
    print(json.dumps(data, indent=2))


def cell(value: Any) -> str:
    """A value as a table shows it: numbers to 4 significant digits, none as '-', lists
    joined, times without their seconds' zeros."""
    if value is None or value == []:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ",".join(cell(item) for item in value)
    text = str(value)
    return text.replace("T00:00:00Z", "").replace(":00Z", "Z")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Left-aligned columns two spaces apart, a header line first."""
    cells = [list(headers), *([cell(value) for value in row] for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in cells
    ]
