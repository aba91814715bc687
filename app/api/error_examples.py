"""Real error bodies for the OpenAPI document, in place of Swagger's placeholders.

Each example is rendered by the exception class the API raises for it (``to_body()``, as
app.api.errors renders every error), so /docs shows the shape and the words a client gets;
tests/integration/test_openapi_guide.py sends the requests that provoke them to a real server
and compares the answers.
"""

from __future__ import annotations

from typing import Any, Final

from app.errors import (
    AuthenticationError,
    CalmonError,
    ConflictError,
    ModelNotFoundError,
    NotFoundError,
    PayloadTooLargeError,
    PayloadValidationError,
    PermissionDeniedError,
    ServiceUnavailableError,
)
from app.ingest.errors import (
    BatchConflictError,
    BatchValidationError,
    LabelsValidationError,
    RowError,
    UnsupportedMediaTypeError,
)

_BATCHES: Final = "/v1/models/{name}/batches"
_LABELS: Final = "/v1/models/{name}/labels"

BY_STATUS: Final[dict[int, CalmonError]] = {
    401: AuthenticationError("invalid or revoked token", invalid_token=True),
    403: PermissionDeniedError(
        "this operation needs the 'admin' scope; token 'dashboard' has ['read']",
        extra={"required_scope": "admin"},
    ),
    404: ModelNotFoundError("card-fraud"),
    409: ConflictError("a model named 'card-fraud' already exists", extra={"model": "card-fraud"}),
    413: PayloadTooLargeError(
        "the body holds more than 800000 separators (commas, brackets, line breaks): more than "
        "100000 rows need (CALMON_MAX_ROWS_PER_REQUEST); split it into several batches",
        extra={"max_rows": 100_000},
    ),
    415: UnsupportedMediaTypeError(
        "Content-Type 'text/plain' is not supported: send application/json or text/csv"
    ),
    422: PayloadValidationError(
        "invalid request: from: Input should be a valid datetime or date, input is too short",
        details=[
            {
                "field": "from",
                "message": "Input should be a valid datetime or date, input is too short",
            }
        ],
    ),
    503: ServiceUnavailableError(
        "the database cannot be reached; retry later (re-sending a batch with the same "
        "batch_id is safe)",
        headers={"Retry-After": "2"},
    ),
}
"""The example of each error status, for every operation that documents it."""

BY_OPERATION: Final[dict[tuple[str, str], dict[int, CalmonError]]] = {
    ("post", _BATCHES): {
        409: BatchConflictError(
            "batch_id '2026-11-01T10' was already used for different content; use a new "
            "batch_id for new data",
            extra={"batch_id": "2026-11-01T10"},
        ),
        422: BatchValidationError(
            [
                RowError(1, "label", "must be 0, 1 or null"),
                RowError(2, "score", "must be a finite number, not the string 'NaN'"),
            ]
        ),
    },
    ("post", _LABELS): {
        422: LabelsValidationError(
            [RowError(0, "label", "must be 0 or 1 (a label update cannot make a label unknown)")]
        )
    },
    ("delete", "/v1/tokens/{token_id}"): {404: NotFoundError("no token with id 7")},
}
"""Where an operation's error says more than the status' example (a refused batch names its
rows and fields)."""


def error_example(method: str, path: str, status: int) -> dict[str, Any] | None:
    """The body ``method path`` answers with ``status``, or None for a status without one."""
    error = BY_OPERATION.get((method, path), {}).get(status) or BY_STATUS.get(status)
    return None if error is None else error.to_body()
