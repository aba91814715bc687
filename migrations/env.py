"""Alembic environment: the URL comes from the Config (see app.db.migrate) or from Settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.db.engine import create_db_engine
from app.db.schema import autogenerate_filters, metadata
from app.settings import Settings, get_settings


def _settings() -> Settings:
    url = context.config.get_main_option("sqlalchemy.url")
    return Settings(database_url=url) if url else get_settings()


def _configure(connection: Connection) -> None:
    filters = autogenerate_filters(connection.dialect.name)
    context.configure(
        connection=connection,
        target_metadata=metadata,
        compare_type=True,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        include_name=filters.include_name,
        include_object=filters.include_object,
    )


def _sqlite_foreign_keys(connection: Connection, enabled: bool) -> None:
    # Batch mode rebuilds a table by dropping it; with foreign keys on, dropping `models`
    # would cascade-delete every prediction. The pragma only works outside a transaction, so
    # it goes straight to the driver connection (autocommit, see app.db.engine).
    cursor = connection.connection.cursor()
    cursor.execute(f"PRAGMA foreign_keys={'ON' if enabled else 'OFF'}")
    cursor.close()


def run_migrations_online() -> None:
    engine = create_db_engine(_settings())
    try:
        with engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                _sqlite_foreign_keys(connection, enabled=False)
            _configure(connection)
            with context.begin_transaction():
                context.run_migrations()
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(f"migration broke foreign keys: {broken[:5]}")
            if sqlite:
                _sqlite_foreign_keys(connection, enabled=True)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run `calmon migrate`")
run_migrations_online()
