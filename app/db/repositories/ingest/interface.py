"""The ingest write's interface: the steps every backend takes, and what the write returns.

A batch of new ids is written in one step (``insert_new``: two binary COPYs on PostgreSQL, one
INSERT from a staging table on SQLite). A batch with stored ids is staged into a temporary table
and upserted (``stage`` then ``upsert``). Everything runs in the caller's transaction, so a
failure anywhere leaves nothing behind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.db.repositories.base import Repository
from app.db.repositories.partitioned_upsert import CHANGED, NEW, SAME, State
from app.db.repositories.staged_rows import StagedRows, newest_per_window
from app.db.repositories.staging import stored_micros


@dataclass(frozen=True)
class WriteResult:
    """What the upsert did: new, changed and identical rows; the windows to recompute (of new
    and changed rows, and the ones changed rows moved out of), and the newest event (row
    timestamp or label time, epoch microseconds) the new and changed rows brought into each
    window they are in."""

    inserted: int
    updated: int
    unchanged: int
    windows_touched: list[int]
    newest_events: dict[int, int]


class IngestRepository(Repository, ABC):
    """Reads and writes of the ingest path inside the caller's transaction (a backend's
    subclass: app.db.repositories.ingest.ingest_repository picks it)."""

    refusals: tuple[type[Exception], ...] = (IntegrityError,)
    """What the database raises for a stored id (or a row it refuses) in ``insert_new``."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.connection: Connection = session.connection()

    def write_rows(self, rows: StagedRows) -> WriteResult:
        """Upsert the rows: new ids are inserted, known ids that differ get the new values.

        A null label never erases a stored one (a re-sent prediction feed must not undo a
        chargeback), and a row re-sent identical is left alone: it is neither an update nor a
        reason to recompute its window.

        The common case (none of the ids is stored yet) is tried first as a plain INSERT: on
        PostgreSQL it costs markedly less than ``ON CONFLICT`` (no speculative insertion), and
        asking first which ids are stored costs as much again (one index probe per row). It
        runs in a savepoint, so a stored id (or another transaction storing one meanwhile)
        sends the batch to the upsert instead of failing it.

        The caller holds the model's row FOR KEY SHARE (predictions has no foreign key to
        models: its check cost one trigger call per row, 138-299 ms per 50,000 rows).
        """
        self.prepare(rows)  # outside the savepoint: the upsert below needs it too
        try:
            with self.connection.begin_nested():
                self.insert_new(rows)
        except self.refusals:
            pass  # a stored id, or a row the database refuses: the upsert tells which
        else:
            newest = newest_per_window(rows.windows, rows.events())
            return WriteResult(len(rows.ids), 0, 0, sorted(newest), newest)
        self.stage(rows)
        return self.result(rows, self.upsert(rows.model_id))

    def prepare(self, rows: StagedRows) -> None:
        """What the tables need before the rows go in (nothing, unless a backend says so)."""

    @abstractmethod
    def insert_new(self, rows: StagedRows) -> None:
        """Insert rows none of whose ids is stored; raises one of ``refusals`` otherwise."""

    @abstractmethod
    def stage(self, rows: StagedRows) -> None:
        """Fill this transaction's staging table with the rows."""

    @abstractmethod
    def upsert(self, model_id: int) -> list[State]:
        """Insert the new staged rows and update the changed ones; their states, grouped."""

    @staticmethod
    def result(rows: StagedRows, states: list[State]) -> WriteResult:
        """The write's counts and touched windows from the staged rows' grouped states."""
        inserted = sum(group[3] for group in states if group[0] == NEW)
        updated = sum(group[3] for group in states if group[0] == CHANGED)
        touched: set[int] = set()
        newest: dict[int, int] = {}
        for state, new_window, old_window, _, event in states:
            if state == SAME:
                continue
            window, instant = stored_micros(new_window), stored_micros(event)
            touched.add(window)
            newest[window] = max(newest.get(window, instant), instant)
            if state == CHANGED:  # the window a row leaves is recomputed too (no new event)
                touched.add(stored_micros(old_window))
        unchanged = len(rows.ids) - inserted - updated
        return WriteResult(inserted, updated, unchanged, sorted(touched), newest)
