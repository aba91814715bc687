"""The schema stays compatible with docs/scaling.md's plan for a distributed PostgreSQL (Citus,
sharding by model): every table has one role in the plan's table, and every key of a table
distributed by model_id begins with model_id. Citus enforces primary and unique keys per shard,
so they must contain the distribution column; a foreign key between two distributed tables must
carry it too; and a reference table (copied to every node) may not point at a distributed one.
Checked on the migrated database of both backends, so a migration that breaks the plan fails
here, not on the day someone shards."""

from __future__ import annotations

import re

from alembic import command
from sqlalchemy import inspect

from app.db.engine import create_db_engine
from app.db.migrate import alembic_config
from tests.support.databases import settings_for
from tests.support.server import REPO_ROOT

PLAN = REPO_ROOT / "docs" / "scaling.md"
DISTRIBUTED, REFERENCE = "distributed", "reference"
POSTGRESQL_ONLY = {"prediction_keys"}  # SQLite keeps ids unique in predictions' own key


def plan_roles() -> dict[str, str]:
    """Table name -> role, read from the roles table under the plan's Citus heading."""
    text = PLAN.read_text()
    section = text.split("## Citus", 1)[1].split("\n## ", 1)[0]
    roles: dict[str, str] = {}
    rows = re.findall(r"^\| ([a-z0-9_, ]+) \| ([^|]+) \|$", section, re.MULTILINE)
    for tables, role in rows[1:]:  # under the header row
        kind = DISTRIBUTED if role.startswith("distributed") else REFERENCE
        for table in tables.split(", "):
            assert table not in roles, f"{table} has two roles in the plan"
            roles[table] = kind
    return roles


def test_every_table_has_one_role_and_every_key_begins_with_the_model(
    empty_database_url: str,
) -> None:
    command.upgrade(alembic_config(empty_database_url), "head")
    engine = create_db_engine(settings_for(empty_database_url))
    try:
        inspector = inspect(engine)
        tables = set(inspector.get_table_names()) - {"alembic_version"}
        roles = plan_roles()
        planned = set(roles)
        if engine.dialect.name != "postgresql":
            planned -= POSTGRESQL_ONLY
        assert planned == tables, "docs/scaling.md's Citus table lists other tables"
        broken = []
        for table in sorted(t for t in tables if roles[t] == DISTRIBUTED):
            keys: list[list[str | None]] = [
                list(inspector.get_pk_constraint(table)["constrained_columns"])
            ]
            keys += [list(u["column_names"]) for u in inspector.get_unique_constraints(table)]
            keys += [i["column_names"] for i in inspector.get_indexes(table) if i["unique"]]
            broken += [f"{table} key {key}" for key in keys if key[:1] != ["model_id"]]
            for foreign in inspector.get_foreign_keys(table):
                target = foreign["referred_table"]
                if (
                    roles[target] == DISTRIBUTED
                    and "model_id" not in foreign["constrained_columns"]
                ):
                    broken.append(f"{table} -> {target} without model_id")
        for table in sorted(t for t in tables if roles[t] == REFERENCE):
            broken += [
                f"reference table {table} -> distributed {foreign['referred_table']}"
                for foreign in inspector.get_foreign_keys(table)
                if roles[foreign["referred_table"]] == DISTRIBUTED
            ]
        assert not broken, broken
    finally:
        engine.dispose()
