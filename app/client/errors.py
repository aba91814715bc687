"""What the client raises when the service refuses a request: its text carries the reasons."""

from __future__ import annotations

from typing import Any

# The problems str(error) lists, and how long each may be: a notebook's traceback shows why a
# batch was refused, and a refusal of 20 long problems stays a few lines (all in .details).
SHOWN_PROBLEMS = 5
MAX_PROBLEM_CHARS = 200


class CalmonAPIError(Exception):
    """The service refused a request (4xx), or kept failing (5xx) after every retry.

    ``str(error)`` is the service's message and its first problems, one a line (``row 3,
    score: must be a finite number``); ``details`` holds every problem the service listed.
    """

    def __init__(self, status_code: int, body: Any) -> None:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        self.status_code = status_code
        self.code: str = error.get("code", "http_error")
        self.details: list[dict[str, Any]] = error.get("details", [])
        self.body = body
        message = error.get("message") or str(body)[:500]
        # The first line alone (the service's message): for a caller that names the rows its
        # own way, as `calmon send` does with rows of the file.
        self.summary = f"HTTP {status_code} {self.code}: {message}"
        lines = [self.summary]
        lines += [f"  {problem_line(detail)}" for detail in self.details[:SHOWN_PROBLEMS]]
        if len(self.details) > SHOWN_PROBLEMS:
            lines.append(f"  ... {len(self.details) - SHOWN_PROBLEMS} more in .details")
        super().__init__("\n".join(lines))


def problem_line(detail: Any) -> str:
    """One problem of an error body as a line: where (row, field) and what."""
    if not isinstance(detail, dict):
        return str(detail)[:MAX_PROBLEM_CHARS]
    where = [f"row {detail['row']}"] if "row" in detail else []
    where += [str(detail["field"])] if "field" in detail else []
    text = f"{', '.join(where)}: {detail.get('message', '')}" if where else str(detail)
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 3] + "..."
