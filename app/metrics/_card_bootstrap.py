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

from app.metrics._kernel import AmountCounts, Budgets, Columns, ReplicateCounts, ValueCurve
from app.metrics._studentized import Offsets, SumDraws
from app.metrics.budget import Budget
from app.metrics.sketch import CurveSketch
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
    ) -> CardReplicates:
        """The value metrics of the rows of ``totals`` (sums of :data:`COLUMNS`, ``(R, 7)``):
        elementwise in each row's sums, so the same floats for replicates and for a window's
        own sums (no row sum whose order the kernel's ``sequential`` would choose)."""
        valued = ValueCurve.of(
            at_threshold(totals, threshold), sequential=True, review_cost=budgets.review_cost
        )
        regular = valued.metrics(None)
        regular["value_recall"] = valued.values.recall()  # prior-invariant
        # Every prior at once, one row each: the value metrics are elementwise in the weight
        # k, so a (G, 1) column of priors gives each row the floats of one call at its prior
        # (the sums are float64, as the priors are). 18 priors' calls of a dozen R-sized steps
        # were a third of the card bootstrap.
        grid = valued.metrics(np.asarray(priors, dtype=np.float64)[:, None])
        return cls(
            regular={name: regular[name] for name in VALUE_METRICS},
            calibrated=[
                {name: column[g] for name, column in grid.items()} for g in range(len(priors))
            ],
        )

    def rows(self, part: slice) -> CardReplicates:
        """The value metrics of the rows in ``part`` alone."""
        return CardReplicates(
            regular={name: column[part] for name, column in self.regular.items()},
            calibrated=[
                {name: column[part] for name, column in at.items()} for at in self.calibrated
            ],
        )


@dataclass(frozen=True)
class CardDraws:
    """A window's entity values and its card bootstrap's draws: each replicate's sums of
    :data:`COLUMNS` ``(R, 7)`` and their spread (:meth:`EntityValues.draw_spread`)."""

    values: EntityValues
    totals: FloatingArray
    spread: FloatingArray

    @classmethod
    def of(cls, values: EntityValues, replicates: int, rng: np.random.Generator) -> CardDraws:
        """``replicates`` entity-resampled sums, drawn in chunks (in order from ``rng``)."""
        chunk = max(1, _CELLS_PER_CHUNK // min(max(1, values.fraud.shape[0]), EXACT_FRAUD_ENTITIES))
        parts = [
            values.draw_spread(min(chunk, replicates - start), rng)
            for start in range(0, replicates, chunk)
        ]
        return cls(
            values=values,
            totals=np.concatenate([p[0] for p in parts]),
            spread=np.concatenate([p[1] for p in parts]),
        )

    def net_savings_offsets(
        self,
        replicated: tuple[CardReplicates, CardReplicates],
        review_cost: float,
        priors: list[float],
        level: float,
    ) -> tuple[Offsets, list[Offsets]]:
        """Net savings' studentized interval ends relative to its value
        (app/metrics/_studentized.py), regular and at each prior; ``replicated``: the
        replicates' and the window's value metrics (:class:`CardReplicates`) from these sums."""
        cards, point = replicated
        draws = SumDraws(
            totals=self.totals,
            spread=self.spread,
            window=self.values.totals()[None, :],
            window_spread=self.values.spread()[None, :, :],
            review_cost=review_cost,
            level=level,
        )
        name = "net_savings"
        drawn = [cards.regular[name]] + [at[name] for at in cards.calibrated]
        bases = [float(point.regular[name][0])] + [float(at[name][0]) for at in point.calibrated]
        return draws.at_priors(drawn, bases, priors)


@dataclass(frozen=True)
class CardIntervals:
    """What the card bootstrap gives the rest of the bootstrap (app/metrics/bootstrap.py): its
    draws, and the replicates' and the window's value metrics from them (regular, calibrated at
    every prior)."""

    draws: CardDraws
    replicates: CardReplicates
    point: CardReplicates

    def net_savings(
        self, review_cost: float, priors: list[float], level: float
    ) -> tuple[Offsets, list[Offsets]]:
        """Net savings' studentized interval ends (:meth:`CardDraws.net_savings_offsets`)."""
        return self.draws.net_savings_offsets(
            (self.replicates, self.point), review_cost, priors, level
        )


def card_values(sketch: CurveSketch) -> EntityValues | None:
    """What the bootstrap draws ``sketch``'s value metrics from by card (:func:`use_cards`):
    its entity values, kept when every row carries an amount and names an entity; None: the
    value metrics come from the rows' replicates."""
    return sketch.entity_values


def use_cards(
    sketch: CurveSketch,
    draw: tuple[int, np.random.Generator],
    priors: list[float],
    budget: Budget,
    sinks: tuple[
        tuple[dict[str, list[FloatingArray]], list[dict[str, list[FloatingArray]]]],
        tuple[Columns, Columns, int],
    ],
) -> CardIntervals | None:
    """With the sketch's entity values, draw ``draw`` (replicates, from the generator) card
    replicates and put their value metrics in ``sinks``' columns (regular, calibrated per
    prior), and the window's in its bases (regular, calibrated at the middle prior)."""
    values = card_values(sketch)
    if values is None:
        return None
    spend, threshold = budget.kernel(), sketch.threshold
    drawn = CardDraws.of(values, *draw)
    # The replicates and the window's own sums in one batch: a row's value metrics are
    # elementwise in its sums (and a cumsum along its two entries), so each row gets the
    # floats of a call of its own, and the second call's fixed cost goes.
    rows = np.concatenate([drawn.totals, values.totals()[None, :]])
    both, drawn_rows = CardReplicates.of(rows, threshold, priors, spend), len(drawn.totals)
    cards, point = both.rows(slice(None, drawn_rows)), both.rows(slice(drawn_rows, None))
    (regular, calibrated), (base_regular, base_calibrated, middle) = sinks
    for name, column in cards.regular.items():
        regular[name] = [column]
        base_regular[name] = point.regular[name]
    for at_prior, drawn_at in zip(calibrated, cards.calibrated, strict=True):
        at_prior.update({name: [column] for name, column in drawn_at.items()})
    base_calibrated.update(point.calibrated[middle])
    return CardIntervals(draws=drawn, replicates=cards, point=point)
