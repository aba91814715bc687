"""The upsert's rule (which staged row is new, changed or the same), and PostgreSQL's upsert into
the partitioned predictions (migration 0011), where prediction_keys holds the ids' uniqueness.

Kept apart from app/db/repositories/ingest/ (postgres.py stages the rows and calls the upsert;
sqlite.py applies the same rule in one statement).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection, text

from app.db.partitions import analyze_new_weeks
from app.db.repositories.staged_rows import PREDICTION_COLUMNS

STAGE: Final = "ingest_stage"
NEW: Final = 0
CHANGED: Final = 1
SAME: Final = 2
_KEY_STATE: Final = "ingest_key_state"
# The staged rows as stored values (PostgreSQL stages instants as epoch microseconds).
_STAGED: Final = (
    "(SELECT prediction_id, "
    "TIMESTAMPTZ 'epoch' + window_staged * INTERVAL '1 microsecond' AS window_start, "
    "TIMESTAMPTZ 'epoch' + ts_staged * INTERVAL '1 microsecond' AS ts, "
    "score, label, segment, "
    "TIMESTAMPTZ 'epoch' + labelled_staged * INTERVAL '1 microsecond' AS labelled_at, "
    f"label_source, amount, entity FROM {STAGE})"
)

State = tuple[int, object, object, int, object]
"""(state, new window, stored window, rows, newest event of the group's rows)."""


# Kept where a re-sent row has none: a null never erases a stored value.
_KEPT_UNLESS_SENT: Final = ("amount", "entity")


def _sets(new: str, stored: str, column: str) -> str:
    """SQL: the row ``new`` sets a value of ``column`` that ``stored`` does not have (a null
    keeps the stored one)."""
    return (
        f"({new}.{column} IS NOT NULL "
        f"AND ({stored}.{column} IS NULL OR {new}.{column} <> {stored}.{column}))"
    )


def label_changes(new: str, stored: str) -> str:
    """SQL: the row ``new`` sets a label value ``stored`` does not have (a null new label
    keeps the stored one)."""
    return _sets(new, stored, "label")


def differs(new: str, stored: str) -> str:
    """SQL: the row ``new`` would change the row ``stored`` (the upsert's rule, in one place).

    window_start, ts, score and segment are NOT NULL and compared as they are. A null label,
    amount or entity keeps the stored one (a re-sent prediction feed must not undo a
    chargeback, nor a feed without amounts erase them), so only a non-null value different
    from the stored one (or set where none was) is a change. A label's time and source are
    not compared: the first arrival of a label value wins, so the same label sent again later
    (a replayed feed, another source) changes nothing.
    """
    columns = ("window_start", "ts", "score", "segment")
    compared = [f"{new}.{c} <> {stored}.{c}" for c in columns]
    kept = [_sets(new, stored, column) for column in _KEPT_UNLESS_SENT]
    return "(" + " OR ".join([*compared, label_changes(new, stored), *kept]) + ")"


def row_field_updates(new: str, stored: str) -> str:
    """SQL SET items of a changed row's amount and entity: the new ones where sent, the stored
    ones otherwise."""
    return ", ".join(
        f"{column} = COALESCE({new}.{column}, {stored}.{column})" for column in _KEPT_UNLESS_SENT
    )


def label_updates(new: str, stored: str) -> str:
    """SQL SET items of a changed row's label, time and source: the new ones where its label
    value changes, the stored ones otherwise (the first arrival of a value wins)."""
    changes = label_changes(new, stored)
    return (
        f"label = COALESCE({new}.label, {stored}.label), "
        f"labelled_at = CASE WHEN {changes} THEN {new}.labelled_at ELSE {stored}.labelled_at END, "
        f"label_source = CASE WHEN {changes} THEN {new}.label_source "
        f"ELSE {stored}.label_source END"
    )


def newest_event(new: str, stored: str, *, postgres: bool) -> str:
    """SQL: the newest event a staged row brings: its timestamp, or the time of the label it
    sets if later (a label it does not change brings none)."""
    label_time = f"CASE WHEN {label_changes(new, stored)} THEN {new}.labelled_at END"
    if postgres:
        return f"GREATEST({new}.ts, {label_time})"  # GREATEST skips NULLs
    return f"max({new}.ts, COALESCE({label_time}, {new}.ts))"  # SQLite's max() does not


def upsert_partitioned(connection: Connection, params: dict[str, int]) -> list[State]:
    """Write the staged rows of model ``params["model_id"]`` when some ids are stored; the
    (state, new window, stored window, rows) groups, as the plain upsert's classification.

    The keys of new ids are inserted, then those of stored ids locked, each in id order (the
    lock order of every batch), noting each stored id's window; then the new rows are
    inserted, the changed ones updated in the week table their key names (a row whose window
    changes week moves table), and the keys of moved rows follow. Whoever changes a row holds
    its key, so the row locks cannot deadlock.
    """
    connection.exec_driver_sql(
        f'CREATE TEMPORARY TABLE {_KEY_STATE} (prediction_id varchar(200) COLLATE "C", '
        "stored_window timestamptz, inserted boolean) ON COMMIT DROP"
    )
    insert_new_keys = text(
        "WITH k AS (INSERT INTO prediction_keys (model_id, prediction_id, window_start) "
        f"SELECT :model_id, prediction_id, window_start FROM {_STAGED} s "
        f"WHERE NOT EXISTS (SELECT 1 FROM {_KEY_STATE} t "
        "WHERE t.prediction_id = s.prediction_id) ORDER BY prediction_id "
        "ON CONFLICT (model_id, prediction_id) DO NOTHING "
        "RETURNING prediction_id, window_start) "
        f"INSERT INTO {_KEY_STATE} SELECT prediction_id, window_start, true FROM k"
    )
    connection.execute(insert_new_keys, params)
    connection.execute(
        text(
            f"INSERT INTO {_KEY_STATE} SELECT k.prediction_id, k.window_start, false "
            f"FROM prediction_keys k JOIN {STAGE} s ON k.prediction_id = s.prediction_id "
            f"WHERE k.model_id = :model_id AND NOT EXISTS (SELECT 1 FROM {_KEY_STATE} t "
            "WHERE t.prediction_id = s.prediction_id) ORDER BY k.prediction_id FOR UPDATE OF k"
        ),
        params,
    )
    # A key deleted by retention between the two statements: its id is new again.
    connection.execute(insert_new_keys, params)
    stored = connection.execute(
        text(f"SELECT DISTINCT stored_window FROM {_KEY_STATE} WHERE NOT inserted")
    ).scalars()
    analyze_new_weeks(connection, params["model_id"], stored)
    states = _classify(connection, params)
    connection.execute(
        text(
            f"INSERT INTO predictions ({', '.join(PREDICTION_COLUMNS)}) "
            "SELECT :model_id, n.prediction_id, n.window_start, n.ts, n.score, n.label, "
            "n.segment, n.labelled_at, n.label_source, n.amount, n.entity "
            f"FROM {_STAGED} n JOIN {_KEY_STATE} k USING (prediction_id) "
            "WHERE k.inserted ORDER BY n.prediction_id"
        ),
        params,
    )
    connection.execute(
        text(
            "UPDATE predictions p SET window_start = n.window_start, ts = n.ts, "
            f"score = n.score, segment = n.segment, {label_updates('n', 'p')}, "
            f"{row_field_updates('n', 'p')} "
            f"FROM {_STAGED} n JOIN {_KEY_STATE} k USING (prediction_id) "
            "WHERE NOT k.inserted AND p.model_id = :model_id "
            "AND p.prediction_id = n.prediction_id AND p.window_start = k.stored_window "
            f"AND {differs('n', 'p')}"
        ),
        params,
    )
    connection.execute(
        text(
            "UPDATE prediction_keys k SET window_start = n.window_start "
            f"FROM {_STAGED} n JOIN {_KEY_STATE} s USING (prediction_id) "
            "WHERE NOT s.inserted AND s.stored_window <> n.window_start "
            "AND k.model_id = :model_id AND k.prediction_id = n.prediction_id"
        ),
        params,
    )
    return states


def _classify(connection: Connection, params: dict[str, int]) -> list[State]:
    """The groups of the staged rows, from the keys just inserted or locked (so the counts are
    exact: no other transaction can change these rows before commit)."""
    result = connection.execute(
        text(
            f"SELECT CASE WHEN k.inserted THEN {NEW} "
            f"WHEN {differs('n', 'p')} THEN {CHANGED} ELSE {SAME} END, "
            "n.window_start, k.stored_window, COUNT(*), "
            f"MAX({newest_event('n', 'p', postgres=True)}) "
            f"FROM {_STAGED} n JOIN {_KEY_STATE} k USING (prediction_id) "
            "LEFT JOIN predictions p ON NOT k.inserted AND p.model_id = :model_id "
            "AND p.prediction_id = n.prediction_id AND p.window_start = k.stored_window "
            "GROUP BY 1, 2, 3"
        ),
        params,
    )
    return [(int(state), new, old, int(count), event) for state, new, old, count, event in result]
