"""SQL of label updates (``POST /v1/models/{name}/labels``): a label, its time and its source
set on rows already stored, by id.

The entries are staged into a temporary table (binary COPY on PostgreSQL, ``executemany`` on
SQLite), then checked and applied with set-based statements, in the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, NamedTuple

import numpy as np
import psycopg
from sqlalchemy import Connection, text
from sqlalchemy.orm import Session

from app.db.copy_binary import Fixed, Texts, copy_data, copy_in
from app.db.driver import DriverConnection, driver_connection
from app.db.partitions import analyze_new_weeks
from app.db.repositories.base import Repository
from app.db.repositories.staged_rows import (
    StagedLabels,
    sqlite_datetimes,
    sqlite_optional_datetimes,
)
from app.db.repositories.staging import (
    create_stage,
    drop_stage,
    id_order,
    stage_instant,
    stored_micros,
)
from app.ingest.timestamps import datetime_to_micros
from app.monitoring.vocabulary import UNKNOWN_LABEL_TIME

_STAGE: Final = "ingest_label_stage"
_COLUMNS: Final = ("entry", "prediction_id", "label", "labelled_staged", "label_source")


class EarlyLabel(NamedTuple):
    """An entry whose label time precedes its stored row's timestamp (epoch microseconds)."""

    entry: int
    labelled_at: int
    timestamp: int


@dataclass(frozen=True)
class LabelResult:
    """Outcome of a label update: the windows whose labels changed, with the newest time of
    the labels set in each (epoch microseconds); or, when some entry's time precedes its row's
    timestamp, nothing changed and the first such entries (``too_early``) and their count."""

    changed_windows: list[int]
    updated: int
    unchanged: int
    unknown_ids: list[str]
    newest_events: dict[int, int]
    too_early: list[EarlyLabel] = field(default_factory=list)
    too_early_count: int = 0


class LabelRepository(Repository):
    """Label updates inside the caller's transaction."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.connection: Connection = session.connection()
        self.driver: DriverConnection = driver_connection(session)

    def update(
        self, model_id: int, labels: StagedLabels, now: datetime, *, report: int = 20
    ) -> LabelResult:
        """Set the label of known ids whose label value changes, with the entry's time (else
        ``now``, or the row's timestamp if later) and source; report the ids the model has never
        seen. A label equal to the stored one changes nothing, its time and source included:
        the first arrival of a value wins.

        If some entry's time precedes its stored row's timestamp, nothing is changed and the
        first ``report`` of them are returned (the caller refuses the update).
        """
        self._stage(labels)
        params: dict[str, Any] = {"model_id": model_id}
        unknown_ids = self._unknown(params)
        if self.on_postgres:
            # Lock the keys in id order first (see staging.id_order): whoever changes a row
            # holds its key, so the row locks below cannot deadlock.
            stored = self.connection.execute(
                text(
                    f"SELECT k.window_start FROM prediction_keys k JOIN {_STAGE} s "
                    f"ON k.prediction_id = s.prediction_id WHERE k.model_id = :model_id"
                    f"{id_order(self.connection, 'k.prediction_id')} FOR NO KEY UPDATE OF k"
                ),
                params,
            ).scalars()
            analyze_new_weeks(self.connection, model_id, stored)
        if (labels.labelled_at != UNKNOWN_LABEL_TIME).any():
            early, count = self._too_early(params, report)
            if count:
                drop_stage(self.connection, _STAGE)
                return LabelResult([], 0, 0, unknown_ids, {}, early, count)
        changed = self._apply(params, now)
        drop_stage(self.connection, _STAGE)
        newest: dict[int, int] = {}
        for window, labelled_at in changed:
            newest[window] = max(newest.get(window, labelled_at), labelled_at)
        known = len(labels.ids) - len(unknown_ids)
        return LabelResult(
            changed_windows=sorted(newest),
            updated=len(changed),
            unchanged=known - len(changed),
            unknown_ids=unknown_ids,
            newest_events=newest,
        )

    def _stage(self, labels: StagedLabels) -> None:
        entries = np.arange(len(labels.ids), dtype=np.int64)
        if self.on_postgres:
            create_stage(
                self.connection,
                _STAGE,
                'entry integer, prediction_id varchar(200) COLLATE "C", label smallint, '
                "labelled_staged bigint, label_source smallint",
            )
            unknown = labels.labelled_at == UNKNOWN_LABEL_TIME
            data = copy_data(
                [
                    Fixed(entries.astype(">i4")),
                    Texts.of(labels.ids),
                    Fixed(labels.labels.astype(">i2")),
                    Fixed(labels.labelled_at.astype(">i8"), nulls=unknown),
                    Fixed(labels.sources.astype(">i2")),
                ],
                len(labels.ids),
            )
            assert isinstance(self.driver, psycopg.Connection)
            copy_in(self.driver, _STAGE, _COLUMNS, data)
            return
        create_stage(
            self.connection,
            _STAGE,
            "entry integer, prediction_id text, label integer, labelled_staged text, "
            "label_source integer",
        )
        rows = zip(
            entries.tolist(),
            labels.ids,
            labels.labels.tolist(),
            sqlite_optional_datetimes(labels.labelled_at),
            labels.sources.tolist(),
            strict=True,
        )
        assert isinstance(self.driver, sqlite3.Connection)
        self.driver.executemany(f"INSERT INTO {_STAGE} VALUES (?, ?, ?, ?, ?)", rows)

    def _keys(self) -> str:
        # PostgreSQL: an id's row is found through its key (which names its week table), so a
        # label probes two indexes, not one per week.
        return "prediction_keys" if self.on_postgres else "predictions"

    def _rows(self) -> str:
        """The staged entries (``s``) joined to their stored rows (``p``), for a FROM."""
        if self.on_postgres:
            return (
                f"{_STAGE} s JOIN prediction_keys k ON k.model_id = :model_id "
                "AND k.prediction_id = s.prediction_id JOIN predictions p "
                "ON p.model_id = :model_id AND p.prediction_id = s.prediction_id "
                "AND p.window_start = k.window_start"
            )
        return (
            f"{_STAGE} s JOIN predictions p ON p.model_id = :model_id "
            "AND p.prediction_id = s.prediction_id"
        )

    def _unknown(self, params: dict[str, Any]) -> list[str]:
        unknown = self.connection.execute(
            text(
                f"SELECT s.prediction_id FROM {_STAGE} s WHERE (SELECT 1 FROM {self._keys()} p "
                f"WHERE p.model_id = :model_id AND p.prediction_id = s.prediction_id) IS NULL"
            ),
            params,
        ).scalars()
        return sorted(unknown)

    def _too_early(self, params: dict[str, Any], report: int) -> tuple[list[EarlyLabel], int]:
        """The first ``report`` entries (by entry) whose time precedes their row's timestamp,
        and how many there are."""
        labelled_at = stage_instant(self.connection, "s.labelled_staged")
        rows = self.connection.execute(
            text(
                f"SELECT s.entry, {labelled_at}, p.ts, COUNT(*) OVER () FROM {self._rows()} "
                f"WHERE s.labelled_staged IS NOT NULL AND {labelled_at} < p.ts "
                "ORDER BY s.entry LIMIT :report"
            ),
            {**params, "report": report},
        ).all()
        early = [EarlyLabel(int(e), stored_micros(at), stored_micros(ts)) for e, at, ts, _ in rows]
        return early, int(rows[0][3]) if rows else 0

    def _apply(self, params: dict[str, Any], now: datetime) -> list[tuple[int, int]]:
        """Update the rows whose label value changes; (window, label time) of each."""
        labelled_at = stage_instant(self.connection, "s.labelled_staged")
        if self.on_postgres:
            received = "GREATEST(CAST(:now AS timestamptz), predictions.ts)"
            now_param: object = now
            rows = (
                f"FROM {_STAGE} s JOIN prediction_keys k ON k.model_id = :model_id "
                "AND k.prediction_id = s.prediction_id "
                "WHERE predictions.model_id = :model_id "
                "AND predictions.prediction_id = s.prediction_id "
                "AND predictions.window_start = k.window_start "
            )
        else:
            received = "max(:now, predictions.ts)"  # the stored text sorts as the instants do
            now_param = sqlite_datetimes(np.array([datetime_to_micros(now)]))[0]
            rows = (
                f"FROM {_STAGE} s WHERE predictions.model_id = :model_id "
                "AND predictions.prediction_id = s.prediction_id "
            )
        changed = self.connection.execute(
            text(
                "UPDATE predictions SET label = s.label, "
                f"labelled_at = COALESCE({labelled_at}, {received}), "
                f"label_source = s.label_source {rows}"
                "AND (predictions.label IS NULL OR predictions.label <> s.label) "
                "RETURNING predictions.window_start, predictions.labelled_at"
            ),
            {**params, "now": now_param},
        ).all()
        return [(stored_micros(window), stored_micros(at)) for window, at in changed]
