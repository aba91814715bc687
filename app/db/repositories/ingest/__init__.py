"""SQL of ingestion: the bulk write of predictions (labels: app/db/repositories/labels.py; batch
records: batches.py).

One interface (``interface.py``: :class:`IngestRepository`, the write's steps and its result)
and one module per backend, since the fast paths differ all the way down: ``postgres.py`` (two
binary COPYs, into the model's table of keys and into predictions, and the partitioned upsert)
and ``sqlite.py`` (a staging table filled by ``executemany``, one INSERT or upsert from it).
:func:`ingest_repository` is the one place the backend is picked.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from app.db.repositories.ingest.interface import IngestRepository, WriteResult
from app.db.repositories.ingest.postgres import PostgresIngestRepository
from app.db.repositories.ingest.sqlite import SqliteIngestRepository

__all__ = ["IngestRepository", "WriteResult", "ingest_repository"]


def ingest_repository(session: Session) -> IngestRepository:
    """The ingest repository of the session's database."""
    if session.get_bind().dialect.name == "postgresql":
        return PostgresIngestRepository(session)
    return SqliteIngestRepository(session)
