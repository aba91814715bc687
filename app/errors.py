"""Domain errors: each carries its HTTP status and a machine-readable code.

They live outside app.api so that services (ingest, models, tokens) can raise them without
importing the web layer; app.api.errors renders every subclass with one handler.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypedDict


class ErrorDetail(TypedDict, total=False):
    """One problem in a request: which field (and for batches which row) and why."""

    field: str
    row: int
    message: str


class CalmonError(Exception):
    """Base of every error that becomes an HTTP response."""

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init_subclass__(
        cls, *, status_code: int | None = None, code: str | None = None, **kwargs: Any
    ) -> None:
        # The status and code stand on the class line, where a reader looks for them; a
        # subclass that names neither keeps its parent's (ModelNotFoundError is a 404).
        super().__init_subclass__(**kwargs)
        if status_code is not None:
            cls.status_code = status_code
        if code is not None:
            cls.code = code

    def __init__(
        self,
        message: str,
        *,
        details: list[ErrorDetail] | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []
        self.headers = headers or {}
        self.extra = extra or {}

    def to_body(self) -> dict[str, Any]:
        """The JSON error body: ``{"error": {"code", "message", "details", ...}}``."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        error.update(self.extra)
        return {"error": error}


class PayloadValidationError(CalmonError, status_code=422, code="validation_error"):
    """The payload is malformed: 422 with the offending fields (and rows)."""


class AuthenticationError(CalmonError, status_code=401, code="not_authenticated"):
    """No usable credentials: 401 with a WWW-Authenticate challenge."""

    def __init__(self, message: str, *, invalid_token: bool = False) -> None:
        challenge = 'Bearer realm="calmon"'
        if invalid_token:
            challenge += ', error="invalid_token"'
        super().__init__(message, headers={"WWW-Authenticate": challenge})


class PermissionDeniedError(CalmonError, status_code=403, code="forbidden"):
    """Valid credentials without the scope the operation needs: 403."""


class NotFoundError(CalmonError, status_code=404, code="not_found"):
    """The named resource does not exist: 404."""


class ModelNotFoundError(NotFoundError):
    """No model of that name, or none the caller's token may see: the same answer for both, so
    a token scoped to some models cannot learn that another team's model exists."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no model named {name!r}", extra={"model": name})


class ConflictError(CalmonError, status_code=409, code="conflict"):
    """The request contradicts stored state (duplicate name, reused batch id): 409."""


class PayloadTooLargeError(CalmonError, status_code=413, code="payload_too_large"):
    """The request exceeds a configured row or byte limit: 413."""


class ServiceUnavailableError(CalmonError, status_code=503, code="unavailable"):
    """A dependency (the database) is not reachable or not migrated: 503."""
