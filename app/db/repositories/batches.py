"""SQL of batch records: the idempotency key of an ingest batch and the response it got."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.db.repositories.base import Repository
from app.db.tables import Batch


class BatchRepository(Repository):
    """Reads and writes rows of ``batches`` inside the caller's transaction."""

    def claim(self, model_id: int, batch_id: str, content_hash: str, rows: int) -> bool:
        """Insert the batch record; False if this (model, batch_id) already exists.

        On PostgreSQL a concurrent transaction holding the same key makes this wait for it to
        end: if it commits we see the conflict (and then its stored response), if it rolls back
        we get the key. SQLite has one writer at a time, so the same holds trivially.
        """
        dialect = postgresql if self.on_postgres else sqlite
        statement = (
            dialect.insert(Batch)
            .values(
                model_id=model_id,
                batch_id=batch_id,
                content_hash=content_hash,
                row_count=rows,
                inserted_rows=0,
                updated_rows=0,
                response={},
            )
            .on_conflict_do_nothing(index_elements=["model_id", "batch_id"])
            .returning(Batch.batch_id)
        )
        return self.session.execute(statement).scalar_one_or_none() is not None

    def find(self, model_id: int, batch_id: str) -> tuple[str, dict[str, Any]]:
        """The content hash and stored response of an existing batch."""
        row = self.session.execute(
            select(Batch.content_hash, Batch.response).where(
                Batch.model_id == model_id, Batch.batch_id == batch_id
            )
        ).one()
        return row.content_hash, row.response

    def finish(
        self, model_id: int, batch_id: str, inserted: int, updated: int, response: dict[str, Any]
    ) -> None:
        """Store the counts and the response a retry of this batch gets back."""
        self.session.execute(
            update(Batch)
            .where(Batch.model_id == model_id, Batch.batch_id == batch_id)
            .values(inserted_rows=inserted, updated_rows=updated, response=response)
        )
