"""What every step of a window's store transaction reads of its model, taken once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import MonitoredModel
from app.monitoring.maturity import MaturityRule
from app.services.model_settings import maturity_rule


@dataclass(frozen=True)
class ModelPass:
    """A model as one store transaction sees it: its row (locked), its clock (the newest event
    it received) and how its windows mature at that clock."""

    model: MonitoredModel
    clock: datetime | None
    maturity: MaturityRule

    @classmethod
    def of(cls, model: MonitoredModel, queue: WindowQueueRepository) -> ModelPass:
        """The model now: its clock read from its windows."""
        clock = queue.model_clock(model.id)
        return cls(model, clock, maturity_rule(model, clock))
