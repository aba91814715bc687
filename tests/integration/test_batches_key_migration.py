"""Migration 0012 re-keys batches by (model_id, batch_id): the batch records stored before it
(what makes a retried batch idempotent) survive it both ways, on both backends."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from app.db.engine import create_db_engine
from app.db.migrate import alembic_config, upgrade
from tests.support.databases import settings_for

STORED = (
    "SELECT model_id, batch_id, content_hash, row_count, inserted_rows, updated_rows "
    "FROM batches ORDER BY model_id, batch_id"
)


def test_batch_records_survive_the_new_key_both_ways(empty_database_url: str) -> None:
    upgrade(empty_database_url, "0011")
    engine = create_db_engine(settings_for(empty_database_url))
    try:
        with engine.begin() as connection:
            # In SQL, not through the ORM: today's models table has columns 0011 lacks.
            models = [
                connection.execute(
                    text(
                        "INSERT INTO models (name, threshold, granularity, timezone, "
                        "pi0_policy, min_label_coverage) "
                        "VALUES (:name, 0.5, 'day', 'UTC', 'historical', 0.8) RETURNING id"
                    ),
                    {"name": name},
                ).scalar_one()
                for name in ("a", "b")
            ]
            for model_id in models:
                for number in range(3):  # the same batch_id under both models
                    connection.execute(
                        text(
                            "INSERT INTO batches (model_id, batch_id, content_hash, row_count, "
                            "inserted_rows, updated_rows, response) "
                            "VALUES (:model, :batch, :hash, 10, 10, 0, '{}')"
                        ),
                        {"model": model_id, "batch": f"batch-{number}", "hash": f"h{number}"},
                    )
            before = connection.execute(text(STORED)).all()
        upgrade(empty_database_url, "0012")
        with engine.connect() as connection:
            assert connection.execute(text(STORED)).all() == before
        command.downgrade(alembic_config(empty_database_url), "0011")
        with engine.connect() as connection:
            assert connection.execute(text(STORED)).all() == before
            ids = connection.execute(text("SELECT id FROM batches")).scalars().all()
            assert len(set(ids)) == len(before)
            assert None not in ids
        upgrade(empty_database_url, "0012")
    finally:
        engine.dispose()
