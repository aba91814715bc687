"""Schemas of the ingestion routes, for the OpenAPI document and the responses.

The routes read their bodies as raw bytes (app.ingest parses and validates them column-wise,
which is what makes a 50,000-row batch fast), so the request models here are never used to
parse: they describe the formats app.ingest.parse and app.ingest.labels accept, and a test
checks the documented examples against a real server.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from app.input_rules import MAX_AMOUNT, MAX_ENTITY_LENGTH
from app.monitoring.vocabulary import LabelSource
from app.schemas.base import ResponseModel

_ID = "The prediction's id, unique per model (1 to 200 characters); a known id updates its row."
_TIMESTAMP = (
    "When the prediction was made: ISO-8601 with a UTC offset (Z or +HH:MM) or Unix seconds."
)
_SCORE = "The model's score, a finite number; higher means more likely fraud."
_LABEL = "1 fraud, 0 legitimate, null (or absent) not known yet; null never erases a label."
_SEGMENT = "A slice of traffic to monitor on its own (1 to 100 characters); absent: 'all'."
_LABELLED_AT = (
    "When the label arrived (chargeback date, investigator's verdict): ISO-8601 with a UTC "
    "offset, not before the prediction's timestamp; absent: when calmon receives it. Only "
    "with a label; the first arrival of a label value keeps its time."
)
_SOURCE = (
    "Where the label comes from: 'feedback' (an investigator's verdict on an alert), "
    "'chargeback' (a dispute or claim) or 'confirmed' (any other definitive outcome, the "
    "default). Only with a label."
)
_AMOUNT = (
    f"The transaction's value in the model's currency, a number from 0 to {MAX_AMOUNT:.0e}; "
    "absent or null: "
    "not known (the metrics of money are then undefined for the row, never 0). A null never "
    "erases a stored amount."
)
_ENTITY = (
    f"The card or account the transaction was made with (1 to {MAX_ENTITY_LENGTH} characters, "
    "not blank), by which per-card metrics group rows; absent or null: not known. A null "
    "never erases a stored entity."
)
_BATCH_ID = (
    "The client's id of this batch (1 to 200 characters, unique per model): re-sending it with "
    "the same rows is a harmless replay. May come as X-Batch-Id or ?batch_id= instead."
)


class PredictionRow(ResponseModel):
    """One prediction of a row-JSON batch."""

    id: str = Field(description=_ID)
    timestamp: str | float = Field(description=_TIMESTAMP)
    score: float = Field(description=_SCORE)
    label: int | None = Field(default=None, description=_LABEL)
    segment: str | None = Field(default=None, description=_SEGMENT)
    labelled_at: str | None = Field(default=None, description=_LABELLED_AT)
    source: LabelSource | None = Field(default=None, description=_SOURCE)
    amount: float | None = Field(default=None, ge=0, le=MAX_AMOUNT, description=_AMOUNT)
    entity: str | None = Field(
        default=None, min_length=1, max_length=MAX_ENTITY_LENGTH, description=_ENTITY
    )


class RowBatch(ResponseModel):
    """A batch as row JSON: one object per prediction."""

    batch_id: str = Field(description=_BATCH_ID)
    rows: list[PredictionRow] = Field(description="The predictions (at least one).")


class PredictionColumns(ResponseModel):
    """The columns of a columnar batch: arrays of one length, row i across them."""

    id: list[str] = Field(description=_ID)
    timestamp: list[str | float] = Field(description=_TIMESTAMP)
    score: list[float] = Field(description=_SCORE)
    label: list[int | None] | None = Field(default=None, description=_LABEL)
    segment: list[str | None] | None = Field(default=None, description=_SEGMENT)
    labelled_at: list[str | None] | None = Field(default=None, description=_LABELLED_AT)
    source: list[LabelSource | None] | None = Field(default=None, description=_SOURCE)
    amount: list[float | None] | None = Field(default=None, description=_AMOUNT)
    entity: list[str | None] | None = Field(default=None, description=_ENTITY)


class ColumnarBatch(ResponseModel):
    """A batch as columnar JSON (the fastest format): one array per field."""

    batch_id: str = Field(description=_BATCH_ID)
    columns: PredictionColumns = Field(description="The predictions, column by column.")


class LabelEntry(ResponseModel):
    """One late label."""

    id: str = Field(description="The id of a prediction already sent.")
    label: int = Field(description="1 fraud, 0 legitimate.")
    labelled_at: str | None = Field(default=None, description=_LABELLED_AT)
    source: LabelSource | None = Field(default=None, description=_SOURCE)


class LabelUpdate(ResponseModel):
    """Late labels as JSON (the bare array of entries is accepted too)."""

    labels: list[LabelEntry] = Field(description="The labels (at least one, each id once).")


class BatchAccepted(ResponseModel):
    """What a stored batch did (201), or what it did when first stored (200, a replay)."""

    batch_id: str = Field(description="The batch's id, as sent.")
    rows_inserted: int = Field(description="Rows with ids the model did not have.")
    rows_updated: int = Field(description="Rows that changed a stored row of the same id.")
    rows_unchanged: int = Field(
        description="Rows identical to the stored row of the same id: not rewritten, no window "
        "recomputed (a null label keeps the stored one)."
    )
    windows_touched: list[datetime] = Field(
        description="Starts (UTC) of the windows the batch changed, queued for the worker."
    )


class LabelsApplied(ResponseModel):
    """What a label update did."""

    rows_updated: int = Field(
        description="Rows whose label changed (they take its time and source)."
    )
    rows_unchanged: int = Field(
        description="Rows that already had that label (their label's time and source stay)."
    )
    unknown_ids: list[str] = Field(
        description="Ids the model has no prediction for (nothing stored for them)."
    )
    windows_touched: list[datetime] = Field(
        description="Starts (UTC) of the windows whose labels changed, queued for the worker."
    )


DOCUMENTED_BODIES = (RowBatch, ColumnarBatch, LabelUpdate)
"""The request models the ingestion routes reference from their openapi_extra."""
