"""Ingestion's domain errors, rendered by the API's one CalmonError handler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.errors import CalmonError, ConflictError, ErrorDetail, PayloadValidationError

MAX_REPORTED_ERRORS = 20


@dataclass(frozen=True, order=True)
class RowError:
    """One problem in a batch: ``row`` is the 0-based row index, BATCH_LEVEL for the batch."""

    row: int
    field: str
    message: str

    def to_detail(self) -> ErrorDetail:
        """The error-body entry for this problem."""
        if self.row < 0:
            return ErrorDetail(field=self.field, message=self.message)
        return ErrorDetail(row=self.row, field=self.field, message=self.message)


BATCH_LEVEL = -1
"""Row index of a problem that concerns the whole batch (batch_id, columns, body)."""


class UnsupportedMediaTypeError(CalmonError, status_code=415, code="unsupported_media_type"):
    """The body's Content-Type or Content-Encoding is not one ingestion reads: 415."""


class BatchValidationError(PayloadValidationError, code="invalid_batch"):
    """The batch was refused whole: the first problems by row, and how many there were."""

    def __init__(self, errors: list[RowError], total: int | None = None) -> None:
        first = sorted(errors)[:MAX_REPORTED_ERRORS]
        count = len(errors) if total is None else total
        super().__init__(
            f"batch refused, nothing was written: {count} invalid "
            f"{'value' if count == 1 else 'values'} (the first {len(first)} listed)",
            details=[error.to_detail() for error in first],
            extra={"error_count": count},
        )


class LabelsValidationError(PayloadValidationError, code="invalid_labels"):
    """A label update was refused whole: the first problems by entry, and how many there were."""

    def __init__(self, errors: list[RowError], total: int | None = None) -> None:
        first = sorted(errors)[:MAX_REPORTED_ERRORS]
        count = len(errors) if total is None else total
        super().__init__(
            f"label update refused, no label was changed: {count} invalid "
            f"{'entry' if count == 1 else 'entries'} (the first {len(first)} listed)",
            details=[error.to_detail() for error in first],
            extra={"error_count": count},
        )


class BatchConflictError(ConflictError, code="batch_conflict"):
    """The batch_id was already used for different content: 409."""


class SegmentLimitError(PayloadValidationError, code="too_many_segments"):
    """The batch would give its model more segments than allowed: 422, nothing written."""


class Problems:
    """Collects the first problems of each field and counts all of them.

    Checks look at rows in order, so the first MAX_REPORTED_ERRORS problems of each field
    contain the first MAX_REPORTED_ERRORS of the batch once merged and sorted.
    """

    def __init__(self) -> None:
        self.reported: list[RowError] = []
        self.total = 0
        self._per_field: dict[str, int] = {}

    def add_mask(
        self, field: str, bad: npt.NDArray[np.bool_], message: str | Callable[[int], str]
    ) -> None:
        """Every row where ``bad`` holds; ``message`` may be a function of the row."""
        rows = np.flatnonzero(bad)
        self.total += len(rows)
        self.reported.extend(
            RowError(row, field, message if isinstance(message, str) else message(row))
            for row in rows[:MAX_REPORTED_ERRORS].tolist()
        )

    def add(self, error: RowError) -> None:
        self.total += 1
        seen = self._per_field.get(error.field, 0)
        if seen < MAX_REPORTED_ERRORS:
            self._per_field[error.field] = seen + 1
            self.reported.append(error)
