"""Alembic driven from code, so `calmon migrate` works from any working directory."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

# migrations/ sits beside the app package in the source tree (installed with `pip install -e .`).
MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(database_url: str) -> Config:
    """An Alembic configuration for ``database_url``, independent of the current directory."""
    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise FileNotFoundError(
            f"Alembic scripts not found at {MIGRATIONS_DIR}; install calmon from a source "
            "checkout with `pip install -e .`"
        )
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser treats % as interpolation; URL-encoded passwords contain it.
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Upgrade the schema at ``database_url`` to ``revision``."""
    command.upgrade(alembic_config(database_url), revision)


def head_revisions(database_url: str) -> tuple[str, ...]:
    """The revision ids the code expects the database to be at."""
    return tuple(ScriptDirectory.from_config(alembic_config(database_url)).get_heads())


def current_revisions(engine: Engine) -> tuple[str, ...]:
    """The revision ids recorded in the database (empty when it was never migrated)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return ()
        # Read the table directly: MigrationContext would log its setup on every probe.
        return tuple(connection.scalars(text("SELECT version_num FROM alembic_version")))
