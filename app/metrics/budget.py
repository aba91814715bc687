"""What a team spends on a window's alerts (alert capacity, review cost), as the metrics take
it: the top-k metrics are taken at the share of rows it can check, net savings at its cost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from app.metrics._kernel import Budgets


@dataclass(frozen=True)
class Budget:
    """What a team spends on a window's alerts, as the metrics take it.

    Attributes
    ----------
    share:
        The share of the window's rows the team can check (``alert_capacity`` over the rows;
        see :meth:`of`); the top-k metrics are taken at it, and are undefined without it.
    review_cost:
        What checking one alert costs (``review_cost``); net savings are undefined without it.
    entity_share:
        The share of the window's entities (cards, accounts) the team can check: the entity
        top k is taken at it.
    """

    share: float | None = None
    review_cost: float | None = None
    entity_share: float | None = None

    @classmethod
    def of(
        cls, capacity: int | None, review_cost: float | None, rows: int, entities: int = 0
    ) -> Budget:
        """A model's budget for a window (or period) of ``rows`` rows and ``entities``
        entities (0: none known)."""
        return cls(
            share=budget_share(capacity, rows),
            review_cost=review_cost,
            entity_share=budget_share(capacity, entities),
        )

    def kernel(self) -> Budgets:
        """The kernel's form of this budget."""
        return Budgets(
            alert_share=self.share, entity_share=self.entity_share, review_cost=self.review_cost
        )


NO_BUDGET: Final = Budget()


def budget_share(capacity: int | None, rows: int) -> float | None:
    """The share of a window's ``rows`` that ``capacity`` alerts cover (at most all of them);
    ``None`` without a capacity or without rows."""
    if capacity is None or rows <= 0:
        return None
    return min(1.0, capacity / rows)
