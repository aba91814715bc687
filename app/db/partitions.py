"""PostgreSQL partitions of predictions and prediction_keys: naming, creation, removal.

Layout (migration 0011; docs/scaling.md has the measurements behind it):

- ``predictions`` is LIST-partitioned by model (``predictions_m<model>``), each model's table
  RANGE-partitioned by ``window_start`` into weeks starting Monday 00:00 UTC
  (``predictions_m<model>_<yyyymmdd>``). A window's rows are in one week's table, so the
  worker's read of one (model, window) is pruned to one partition; a model's retention drops
  its old weeks and deleting a model drops its whole tree, without touching other models.
- ``prediction_keys (model_id, prediction_id) -> window_start``, LIST-partitioned by model
  (``prediction_keys_m<model>``), holds what a partitioned table cannot: the uniqueness of an id
  within its model (a primary key of a partitioned table must contain the partition key) and
  the way a late label finds its row's week without probing every week's index.

Tables are created by calmon itself when a batch needs one (and by the worker a week ahead),
not by pg_partman: that extension is not in the stock PostgreSQL image the compose file runs,
and the rule here is a few lines. Creation is ``CREATE TABLE ... (LIKE ...)`` then ``ATTACH
PARTITION``: ATTACH takes SHARE UPDATE EXCLUSIVE on the parent, which ingest does not conflict
with, where ``CREATE TABLE ... PARTITION OF`` takes ACCESS EXCLUSIVE and would queue every
batch behind it. Removal is ``DETACH PARTITION ... CONCURRENTLY`` then ``DROP TABLE`` on an
autocommit connection, for the same reason. SQLite has one plain table and none of this.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Final

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection, Engine, text

PREDICTIONS: Final = "predictions"
KEYS: Final = "prediction_keys"
WEEK: Final = timedelta(days=7)
_MONDAY: Final = datetime(1970, 1, 5, tzinfo=UTC)  # the first Monday of the Unix epoch
_WEEK_MICROS: Final = 7 * 86_400 * 1_000_000
_MONDAY_MICROS: Final = 4 * 86_400 * 1_000_000
# pg_advisory_xact_lock(class, model): one creator of a model's tables at a time.
_LOCK_CLASS: Final = 1_143_014  # arbitrary, fixed: "calmon partitions"


def week_starts(window_micros: npt.NDArray[np.int64]) -> list[int]:
    """The distinct week starts (UTC epoch microseconds) the windows fall in, ascending."""
    if window_micros.size == 0:
        return []
    weeks = (window_micros - _MONDAY_MICROS) // _WEEK_MICROS * _WEEK_MICROS + _MONDAY_MICROS
    return [int(week) for week in np.unique(weeks)]


def week_of(instant: datetime) -> datetime:
    """The Monday 00:00 UTC that starts the week ``instant`` falls in."""
    return _MONDAY + (instant - _MONDAY) // WEEK * WEEK


def model_table(parent: str, model_id: int) -> str:
    return f"{parent}_m{model_id}"


def week_table(model_id: int, week: datetime) -> str:
    return f"{model_table(PREDICTIONS, model_id)}_{week:%Y%m%d}"


def _week(micros: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)


def ensure_partitions(connection: Connection, model_id: int, weeks: Iterable[int]) -> None:
    """Create the model's tables and the weeks' tables that do not exist yet, in the caller's
    transaction (so a batch that fails leaves none behind).

    Race-safe between API processes: a creator takes a per-model advisory lock and looks
    again, so the second of two batches needing the same week waits for the first to commit
    and then finds the table. The common case (everything exists) is one catalog lookup.
    """
    wanted = [model_table(PREDICTIONS, model_id), model_table(KEYS, model_id)]
    wanted += [week_table(model_id, _week(week)) for week in weeks]
    if not _missing(connection, wanted):
        return
    connection.execute(
        text("SELECT pg_advisory_xact_lock(:lock, :model)"),
        {"lock": _LOCK_CLASS, "model": model_id},
    )
    missing = set(_missing(connection, wanted))
    for parent in (PREDICTIONS, KEYS):
        name = model_table(parent, model_id)
        if name in missing:
            by_week = " PARTITION BY RANGE (window_start)" if parent == PREDICTIONS else ""
            _attach(connection, parent, name, f"FOR VALUES IN ({int(model_id)})", by_week)
    for week in weeks:
        name = week_table(model_id, _week(week))
        if name in missing:
            start = _week(week)
            bounds = f"FOR VALUES FROM ('{start.isoformat()}') TO ('{(start + WEEK).isoformat()}')"
            _attach(connection, model_table(PREDICTIONS, model_id), name, bounds, "")


def _missing(connection: Connection, names: list[str]) -> list[str]:
    # pg_class read by a query, under the statement's snapshot: to_regclass() goes through the
    # catalog cache, which can still say "missing" just after another transaction committed
    # the table (measured: the second of two racing creators then failed on a duplicate).
    return list(
        connection.execute(
            text(
                "SELECT name FROM unnest(CAST(:names AS text[])) AS name WHERE NOT EXISTS "
                "(SELECT 1 FROM pg_class c WHERE c.relname = name "
                "AND c.relnamespace = to_regnamespace(current_schema()))"
            ),
            {"names": names},
        ).scalars()
    )


def _attach(connection: Connection, parent: str, name: str, bounds: str, by: str) -> None:
    # LIKE copies columns (with the "C" collation of prediction_id), defaults and CHECKs;
    # ATTACH adds the parent's indexes.
    connection.exec_driver_sql(
        f"CREATE TABLE {name} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS){by}"
    )
    connection.exec_driver_sql(f"ALTER TABLE {parent} ATTACH PARTITION {name} {bounds}")


def weeks_of_model(connection: Connection, model_id: int) -> list[datetime]:
    """Start of every week table the model has, ascending."""
    prefix = model_table(PREDICTIONS, model_id) + "_"
    names = connection.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = to_regclass(:parent)"
        ),
        {"parent": model_table(PREDICTIONS, model_id)},
    ).scalars()
    return sorted(
        datetime.strptime(name.removeprefix(prefix), "%Y%m%d").replace(tzinfo=UTC) for name in names
    )


def drop_partition(engine: Engine, parent: str, name: str) -> bool:
    """Detach ``name`` from ``parent`` without blocking writers of other partitions, then drop
    it; False if it did not exist. Outside any transaction (DETACH CONCURRENTLY needs that):
    it waits for the transactions already using ``parent`` to end, while new ones go on.

    A detach interrupted half-way (the process died) leaves the table "pending detach", which
    only FINALIZE completes: done here when found.
    """
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        # A partitioned table has at most one detach pending: detaches take turns.
        connection.execute(text("SELECT pg_advisory_lock(:lock, 0)"), {"lock": _LOCK_CLASS})
        try:
            return _detach_and_drop(connection, parent, name)
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:lock, 0)"), {"lock": _LOCK_CLASS})


def _detach_and_drop(connection: Connection, parent: str, name: str) -> bool:
    pending = connection.execute(
        text(
            "SELECT i.inhdetachpending FROM pg_inherits i "
            "WHERE i.inhrelid = to_regclass(:name) AND i.inhparent = to_regclass(:parent)"
        ),
        {"name": name, "parent": parent},
    ).scalar_one_or_none()
    if pending is None:
        exists = connection.execute(
            text("SELECT to_regclass(:name) IS NOT NULL"), {"name": name}
        ).scalar_one()
        if not exists:
            return False
    else:
        mode = "FINALIZE" if pending else "CONCURRENTLY"
        connection.exec_driver_sql(f"ALTER TABLE {parent} DETACH PARTITION {name} {mode}")
    connection.exec_driver_sql(f"DROP TABLE {name}")
    return True


_PARTITION_NAME: Final = re.compile(rf"^(?:{PREDICTIONS}|{KEYS})_m\d+(?:_\d{{8}})?$")


def is_partition(table: str) -> bool:
    """Whether ``table`` is one of the tables created here (migrations leave them alone)."""
    return _PARTITION_NAME.match(table) is not None


def create_coming_weeks(connection: Connection, now: datetime) -> None:
    """Make sure every model has this week's and next week's tables, so that the first batch of
    a week does not pay for creating one (the worker calls this now and then)."""
    this_week = (week_of(now) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    weeks = [this_week, this_week + _WEEK_MICROS]
    for model_id in connection.execute(text("SELECT id FROM models ORDER BY id")).scalars():
        ensure_partitions(connection, model_id, weeks)


def analyze_new_weeks(connection: Connection, model_id: int, windows: Iterable[datetime]) -> None:
    """ANALYZE the week tables of these windows that have never been analyzed.

    A week table autovacuum has not reached yet has no statistics, and the planner then takes
    ``model_id = :m`` for a 0.5% filter where it keeps every row: it nested-looped a label
    update of 2,900 ids over 240,000 rows for 39 s (0.18 s once the week was analyzed, which
    took 0.014 s). Once per week table; cheap, and it blocks no writer.
    """
    names = sorted({week_table(model_id, week_of(window)) for window in windows})
    if not names:
        return
    never = connection.execute(
        text(
            "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(CAST(:names AS text[])) "
            "AND schemaname = current_schema() "
            "AND last_analyze IS NULL AND last_autoanalyze IS NULL"
        ),
        {"names": names},
    ).scalars()
    for name in list(never):
        connection.exec_driver_sql(f"ANALYZE {name}")
