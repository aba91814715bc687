"""The value metrics' card bootstrap: replicates that resample entities, not rows.

A window whose rows all carry an amount and name an entity keeps its sums by entity
(:class:`EntityValues`). Each replicate weights every fraud entity by its own Poisson(1) count,
so a card's frauds, their amounts and its legitimate rows move together; the entities without
a fraud are drawn as one normal (see app/metrics/sketch_entity_values.py). The value metrics
depend on a replicate only through the seven sums at the threshold, so a replicate becomes a
two-entry sketch (the threshold, and one entry below it) and goes through the same kernel
formulas as every other replicate: regular, and calibrated to each prior.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from app.metrics._kernel import AmountCounts, Budgets, Columns, Prepared, ReplicateCounts
from app.metrics.sketch_entity_values import EXACT_FRAUD_ENTITIES, EntityValues
from app.metrics.types import FloatingArray

VALUE_METRICS: Final = ("value_recall", "value_precision", "net_savings")
_CELLS_PER_CHUNK: Final = 1 << 18  # replicates x fraud entities per draw (~2 MB)


def at_threshold(totals: FloatingArray, threshold: float) -> ReplicateCounts:
    """Sums of :data:`COLUMNS` per row ``(R, 7)`` as a two-entry sketch's counts: positives
    and their amount at the threshold's entry (flagged) or one just below it; flagged
    negatives tied with the threshold, the others below."""
    pos, pos_flagged, caught, total, neg, neg_flagged, neg_amount = totals.T
    rows = totals.shape[0]
    return ReplicateCounts(
        # The normal part may draw a few more flagged than in all: none are then below.
        positives_at=np.stack([pos_flagged, np.clip(pos - pos_flagged, 0.0, None)], axis=1),
        negatives_tied=np.stack([neg_flagged, np.zeros(rows)], axis=1),
        negatives_between=np.zeros((rows, 2)),
        negatives_below=np.clip(neg - neg_flagged, 0.0, None),
        threshold_index=0,
        scores=np.array([threshold, np.nextafter(threshold, -np.inf)]),
        amounts=AmountCounts(
            positive_at=np.stack([caught, np.clip(total - caught, 0.0, None)], axis=1),
            negative_flagged=neg_amount,
        ),
    )


@dataclass(frozen=True)
class CardReplicates:
    """The value metrics of every replicate: ``regular[name]`` ``(R,)``, and ``calibrated[g]
    [name]`` at prior ``g`` (prior-invariant ones left out, as :meth:`Prepared.calibrated`)."""

    regular: Columns
    calibrated: list[Columns]

    @classmethod
    def of(
        cls,
        totals: FloatingArray,
        threshold: float,
        priors: list[float],
        budgets: Budgets,
        *,
        sequential: bool = True,
    ) -> CardReplicates:
        """The value metrics of the rows of ``totals`` (sums of :data:`COLUMNS`, ``(R, 7)``)."""
        prepared = Prepared.of(
            at_threshold(totals, threshold), sequential=sequential, budgets=budgets
        )
        regular = prepared.value_metrics(None)
        regular["value_recall"] = prepared.invariant["value_recall"]  # prior-invariant
        return cls(
            regular={name: regular[name] for name in VALUE_METRICS},
            calibrated=[prepared.value_metrics(prior) for prior in priors],
        )


def draw_totals(values: EntityValues, replicates: int, rng: np.random.Generator) -> FloatingArray:
    """``replicates`` entity-resampled sums of :data:`COLUMNS` ``(R, 7)``, drawn in chunks (in
    order from ``rng``)."""
    chunk = max(1, _CELLS_PER_CHUNK // min(max(1, values.fraud.shape[0]), EXACT_FRAUD_ENTITIES))
    parts = [
        values.draw(min(chunk, replicates - start), rng) for start in range(0, replicates, chunk)
    ]
    return np.concatenate(parts)
