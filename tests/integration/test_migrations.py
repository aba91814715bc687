"""Migrations: the stairway (every revision upgrades, downgrades and upgrades again) and
"the models match the migrations" (autogenerate finds no difference), on both backends."""

from __future__ import annotations

import importlib.util

import numpy as np
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import Script, ScriptDirectory
from sqlalchemy import inspect

from app.db.engine import create_db_engine
from app.db.migrate import MIGRATIONS_DIR, alembic_config, current_revisions, head_revisions
from app.db.schema import autogenerate_filters, metadata
from app.metrics import CurveSketch, build_sketch
from tests.support.databases import settings_for


def _revisions_oldest_first() -> list[Script]:
    scripts = ScriptDirectory(str(MIGRATIONS_DIR))
    return list(reversed(list(scripts.walk_revisions("base", "heads"))))


def test_there_is_one_head() -> None:
    """Two heads mean two engineers branched the history; `calmon migrate` would refuse."""
    assert len(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads()) == 1


def test_stairway(empty_database_url: str) -> None:
    """Each revision in order: upgrade to it, downgrade one step, upgrade again.

    Finds forgotten downgrades, types or indexes left behind by a downgrade, and typos.
    One database for the whole walk keeps it fast; each step starts where the last ended.
    """
    config = alembic_config(empty_database_url)
    engine = create_db_engine(settings_for(empty_database_url))
    try:
        for script in _revisions_oldest_first():
            command.upgrade(config, script.revision)
            assert current_revisions(engine) == (script.revision,)
            command.downgrade(config, script.down_revision or "base")  # type: ignore[arg-type]
            command.upgrade(config, script.revision)
        command.downgrade(config, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()


def test_models_match_migrations(empty_database_url: str) -> None:
    """After `upgrade head`, autogenerate sees no difference between the tables and the ORM."""
    command.upgrade(alembic_config(empty_database_url), "head")
    engine = create_db_engine(settings_for(empty_database_url))
    try:
        assert current_revisions(engine) == head_revisions(empty_database_url)
        with engine.connect() as connection:
            filters = autogenerate_filters(connection.dialect.name)
            context = MigrationContext.configure(
                connection,
                opts={
                    "compare_type": True,
                    "include_name": filters.include_name,
                    "include_object": filters.include_object,
                },
            )
            diff = compare_metadata(context, metadata)
        assert diff == []
    finally:
        engine.dispose()


def test_upgrade_twice_is_a_no_op(empty_database_url: str) -> None:
    """`calmon serve` migrates on every start on SQLite: a second upgrade must change nothing."""
    config = alembic_config(empty_database_url)
    command.upgrade(config, "head")
    command.upgrade(config, "head")
    engine = create_db_engine(settings_for(empty_database_url))
    try:
        assert current_revisions(engine) == head_revisions(empty_database_url)
    finally:
        engine.dispose()


def test_large_window_values_use_lz4_where_postgresql_has_it(empty_database_url: str) -> None:
    """Revision 0003 switches the worker's large columns to lz4 (cheaper series rewrites)."""
    if not empty_database_url.startswith("postgresql"):
        return  # SQLite has no TOAST
    command.upgrade(alembic_config(empty_database_url), "head")
    engine = create_db_engine(settings_for(empty_database_url))
    try:
        with engine.connect() as connection:
            lz4 = connection.exec_driver_sql(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                "WHERE name = 'default_toast_compression'"
            ).scalar()
            methods: dict[str, str] = dict(
                connection.exec_driver_sql(
                    "SELECT attname, attcompression FROM pg_attribute "
                    "WHERE attrelid = 'window_metrics'::regclass AND attname IN "
                    "('sketch', 'interval_grid', 'result', 'intervals', 'decomposition')"
                ).all()
            )
        assert methods == dict.fromkeys(methods, "l" if lz4 else "")
        assert len(methods) == 5
    finally:
        engine.dispose()


def test_the_card_bootstrap_downgrade_writes_the_sketch_the_code_before_wrote() -> None:
    """Migration 0022's downgrade drops a sketch's entity values (flag 4) and nothing else: the
    bytes are those of the same sketch without them, which the code before 0022 wrote and
    reads; sketches without entity values are left as they are."""
    path = MIGRATIONS_DIR / "versions" / "0022_recompute_windows_for_card_bootstrap.py"
    spec = importlib.util.spec_from_file_location("migration_0022", path)
    assert spec is not None
    assert spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    rng = np.random.default_rng(22)
    scores = rng.normal(size=400) + np.repeat([0.0, 2.0], [380, 20])
    labels = np.repeat(np.array([0, 1], dtype=np.int8), [380, 20])
    amounts = rng.lognormal(3.0, 1.0, 400)
    codes = rng.integers(0, 60, 400)
    full = build_sketch(scores, labels, threshold=1.0, amounts=amounts, entities=codes)
    assert full.entity_values is not None
    before = full.with_entities(full.entities, None)
    assert migration.without_entity_values(full.to_bytes()) == before.to_bytes()
    assert CurveSketch.from_bytes(before.to_bytes()).entity_values is None
    for plain in (before, build_sketch(scores, labels, threshold=1.0, amounts=amounts)):
        assert migration.without_entity_values(plain.to_bytes()) is None
