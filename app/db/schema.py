"""The complete table metadata: every module that defines tables is imported here.

Alembic's env.py and the models-match-migrations test read ``metadata`` from this module, so a
table module that is not imported here would silently fall out of autogenerate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from app.db import metrics_tables, tables  # noqa: F401  (registers the tables on Base.metadata)
from app.db.base import Base
from app.db.partitions import is_partition

metadata = Base.metadata


class AutogenerateFilters(NamedTuple):
    include_name: Callable[[str | None, str, Any], bool]
    include_object: Callable[[Any, str | None, str, bool, Any], bool]


def autogenerate_filters(dialect: str) -> AutogenerateFilters:
    """Alembic's ``include_name``/``include_object`` for a database of ``dialect`` (env.py and
    the models-match-migrations test both pass them, so both compare the same things).

    Left out: the partitions of predictions and prediction_keys, which calmon creates as
    batches need them (app/db/partitions.py), never a migration; on SQLite the tables of the
    PostgreSQL layout alone (``info={"postgresql_only": True}``: prediction_keys); on PostgreSQL
    the indexes its primary keys make redundant there (``info={"sqlite_only": True}``).
    """

    def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
        return not (type_ == "table" and name is not None and is_partition(name))

    def include_object(
        item: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
    ) -> bool:
        if type_ == "table" and item.info.get("postgresql_only", False):
            return dialect == "postgresql"
        if type_ == "index" and not reflected and item.info.get("sqlite_only", False):
            return dialect == "sqlite"
        return True

    return AutogenerateFilters(include_name, include_object)
