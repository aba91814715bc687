"""Alembic environment: the URL comes from the Config (see app.db.migrate) or from Settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.db.engine import create_db_engine
from app.db.schema import metadata
from app.settings import Settings, get_settings


def _settings() -> Settings:
    url = context.config.get_main_option("sqlalchemy.url")
    return Settings(database_url=url) if url else get_settings()


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )


def run_migrations_online() -> None:
    engine = create_db_engine(_settings())
    try:
        with engine.connect() as connection:
            _configure(connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run `calmon migrate`")
run_migrations_online()
