"""Per-entity sums behind the value metrics' card bootstrap (app/metrics/bootstrap.py).

Frauds come in bursts by card: one card's frauds share their scores' and amounts' luck, so a
bootstrap that resamples rows sees too little spread in the fraud amount caught. When every row
carries an amount and names an entity (card, account), the sketch also keeps what resampling
entities needs, still O(positives):

* per entity holding a fraud, its seven sums (:data:`COLUMNS`): all of its rows move together;
* the entities without a fraud (nearly all of them) as one group: their count, and the sums of
  their three columns (negatives, flagged negatives, flagged amount) and of the columns'
  pairwise products. Their Poisson(1)-weighted sum has that mean and that covariance, and is
  drawn as the matching normal (like the legitimate flagged amount of the row bootstrap).

A replicate draws a Poisson(1) weight for each of the :data:`EXACT_FRAUD_ENTITIES` fraud
entities with the largest fraud amount (those that make a heavy-tailed sum skewed), and the rest
of the fraud entities join the normal: a window of 10^6 rows with 10^4 fraud cards costs 512
draws a replicate, not 10^4.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from app.metrics._poisson_inversion import poisson_inverted
from app.metrics.errors import InvalidInputError
from app.metrics.sketch_amounts import frozen
from app.metrics.types import Float64Array, Int64Array

COLUMNS: Final = (
    "positives",
    "positives_flagged",
    "amount_caught",
    "amount_total",
    "negatives",
    "negatives_flagged",
    "negative_amount_flagged",
)
"""An entity's sums: its frauds (all, and at or above the threshold), their amount (caught,
and in all), its legitimate rows (all, and flagged) and the flagged legitimate amount."""
_LEGIT: Final = slice(4, 7)  # the columns an entity without a fraud can have non-zero
SPREAD: Final = (0, 1, 2, 4, 5)
"""The columns net savings depends on (frauds, flagged frauds, amount caught, legitimate rows,
flagged legitimate rows), whose pairwise products a replicate's spread is taken over."""
_WIDTH: Final = len(COLUMNS)
_UPPER: Final = np.triu_indices(3)
EXACT_FRAUD_ENTITIES: Final = 512
"""Fraud entities drawn one by one (those with the largest fraud amount); the rest join the
normal. A window of up to this many fraud entities is resampled exactly."""


@dataclass(frozen=True, eq=False)
class EntityValues:
    """The sums of :data:`COLUMNS` by entity (see the module docstring).

    Attributes
    ----------
    fraud:
        One row of :data:`COLUMNS` per entity holding a fraud, shape ``(F, 7)``, in a canonical
        (sorted) order.
    legit_count:
        Entities without a fraud.
    legit_sum:
        Their sums of the last three columns, shape ``(3,)``.
    legit_products:
        Their sums of the products of those columns, pairwise, shape ``(3, 3)``.
    """

    fraud: Float64Array
    legit_count: int
    legit_sum: Float64Array
    legit_products: Float64Array

    def totals(self) -> Float64Array:
        """The window's sums of :data:`COLUMNS`, shape ``(7,)``."""
        out: Float64Array = self.fraud.sum(axis=0)
        out[_LEGIT] += self.legit_sum
        return out

    def draw(
        self, size: int, rng: np.random.Generator, exact: int = EXACT_FRAUD_ENTITIES
    ) -> Float64Array:
        """``size`` replicates of :meth:`totals`, shape ``(size, 7)``: each of the ``exact``
        fraud entities with the largest fraud amount (all of them, when no more) weighted by its
        own Poisson(1) count; the other entities' weighted sum drawn as a normal with its mean
        and covariance (each row's sums, and the sums of their products), clipped at 0."""
        return self.draw_spread(size, rng, exact)[0]

    def draw_spread(
        self, size: int, rng: np.random.Generator, exact: int = EXACT_FRAUD_ENTITIES
    ) -> tuple[Float64Array, Float64Array]:
        """:meth:`draw`'s replicates (the same draws from ``rng``), and each replicate's sums
        of the :data:`SPREAD` columns' pairwise products, shape ``(size, 5, 5)``: the
        Poisson bootstrap's own estimate of the covariance of its sums (the drawn entities'
        products weighted by their counts, the normal part's covariance as it is), which a
        studentized interval divides by (app/metrics/_studentized.py)."""
        heavy = np.sort(np.argsort(-self.fraud[:, 3], kind="stable")[:exact])  # stored order
        light = np.ones(self.fraud.shape[0], dtype=bool)
        light[heavy] = False
        weights = poisson_inverted(1.0, (size, heavy.size), rng)
        out = weights @ self.fraud[heavy]
        mean = self.fraud[light].sum(axis=0)
        mean[_LEGIT] += self.legit_sum
        covariance = self.fraud[light].T @ self.fraud[light]
        covariance[_LEGIT, _LEGIT] += self.legit_products
        # A covariance's square root by its eigenvectors: it may be singular (no flagged row).
        eigen, vectors = np.linalg.eigh(covariance)
        root = vectors * np.sqrt(np.clip(eigen, 0.0, None))
        out += np.clip(mean + rng.standard_normal((size, _WIDTH)) @ root.T, 0.0, None)
        drawn = self.fraud[heavy][:, SPREAD]
        outer = (drawn[:, :, None] * drawn[:, None, :]).reshape(heavy.size, len(SPREAD) ** 2)
        spread = (weights @ outer).reshape(size, len(SPREAD), len(SPREAD))
        spread += covariance[np.ix_(SPREAD, SPREAD)]
        return out, spread

    def spread(self) -> Float64Array:
        """The window's own sums of the :data:`SPREAD` columns' pairwise products (every
        weight 1), shape ``(5, 5)``: :meth:`draw_spread`'s second part for the window itself."""
        columns = self.fraud[:, SPREAD]
        products: Float64Array = columns.T @ columns
        products[3:, 3:] += self.legit_products[:2, :2]  # SPREAD's last two: legit's first two
        return products

    def arrays(self) -> Float64Array:
        """All parts as one float64 array: F, the fraud rows, the count, the sums, then the
        upper triangle of the products."""
        head = [float(self.fraud.shape[0])]
        tail = [float(self.legit_count), *self.legit_sum, *self.legit_products[_UPPER]]
        return np.concatenate([head, self.fraud.ravel(), tail])

    @classmethod
    def of_array(cls, values: Float64Array) -> EntityValues:
        """Inverse of :meth:`arrays`, checked: sizes, finite and non-negative sums."""
        fraud_rows = int(values[0]) if values.size and math.isfinite(values[0]) else -1
        if fraud_rows < 0 or values.size != 1 + _WIDTH * fraud_rows + 10:
            raise InvalidInputError("inconsistent sketch entity values: size")
        if not (np.all(np.isfinite(values)) and values.min(initial=0.0) >= 0.0):
            raise InvalidInputError("inconsistent sketch entity values: a negative sum")
        fraud = values[1 : 1 + _WIDTH * fraud_rows].reshape(fraud_rows, _WIDTH).copy()
        tail = values[1 + _WIDTH * fraud_rows :]
        products = np.zeros((3, 3))
        products[_UPPER] = tail[4:]
        products = products + np.triu(products, 1).T
        return cls(
            fraud=frozen(fraud),
            legit_count=int(tail[0]),
            legit_sum=frozen(tail[1:4].copy()),
            legit_products=frozen(products),
        )


def entity_values(
    scores: Float64Array,
    labels: npt.NDArray[Any],
    amounts: Float64Array,
    entities: tuple[Int64Array, int],
    threshold: float,
) -> EntityValues:
    """The window's :class:`EntityValues` (rows already checked: finite scores, 0/1 labels,
    amounts >= 0); ``entities``: each row's entity as an index, and how many there are (from
    the one sort of the codes, ``entity_rows``). Counts are exact; amounts are summed in a
    sorted order, so the same rows read back in another order give the same floats."""
    entity, size = entities
    # The rows of each kind as indices, taken once: the few frauds and flagged rows are then
    # gathered, where a boolean mask of all the rows, built and compressed for each of six
    # columns, cost two passes over the window each (with _moments' indices, this function
    # 33.6 -> 25.2 ms at 10^6 rows and 330,000 cards, 9.0 -> 6.5 at 2.5 x 10^5).
    positive = np.flatnonzero(labels)
    flagged = np.flatnonzero(scores >= threshold)
    positive_flagged = positive[scores[positive] >= threshold]
    negative_flagged = flagged[labels[flagged] == 0]
    # One contiguous array a column: the entities without a fraud are then three compressions
    # of contiguous rows, where the 2-D mask of an (entities, 7) array took 1.9 ms and left
    # strided columns (3 x 10^5 rows, 95,000 cards).
    sums = np.empty((_WIDTH, size))
    for column, rows in ((0, positive), (1, positive_flagged), (5, negative_flagged)):
        sums[column] = np.bincount(entity[rows], minlength=size)
    sums[4] = np.bincount(entity, minlength=size) - sums[0]
    # Only frauds and flagged legitimate rows carry an amount here: a few percent of the rows.
    # bincount adds in array order, so rows sorted by amount alone reach each entity's sum in
    # ascending order (equal amounts: equal floats, in any order), as a sort by entity would.
    for column, rows in ((2, positive_flagged), (3, positive), (6, negative_flagged)):
        at, value = entity[rows], amounts[rows]
        order = np.argsort(value)
        sums[column] = np.bincount(at[order], weights=value[order], minlength=size)
    has_fraud = sums[0] > 0
    fraud = sums[:, has_fraud].T
    fraud = fraud[np.lexsort(fraud.T[::-1])]
    without_fraud = ~has_fraud
    legit = [row[without_fraud] for row in sums[_LEGIT]]
    legit_sum, legit_products = _moments(legit)
    return EntityValues(
        fraud=frozen(np.ascontiguousarray(fraud)),
        legit_count=int(legit[0].size),
        legit_sum=frozen(legit_sum),
        legit_products=frozen(legit_products),
    )


def _moments(legit: list[Float64Array]) -> tuple[Float64Array, Float64Array]:
    """The sums of the columns (counts, counts, amount) and of their pairwise products. Counts
    and their products are integers, exact in any order; a sum with the amount is taken only
    over the entities with a flagged amount, sorted: the same for any order of the rows."""
    counts = [column.astype(np.int64) for column in legit[:2]]
    sums = np.empty(3)
    products = np.empty((3, 3))
    sums[:2] = [column.sum() for column in counts]
    for a, b in ((0, 0), (0, 1), (1, 1)):  # integer dot products (numpy's int matmul is slow)
        products[a, b] = products[b, a] = np.dot(counts[a], counts[b])
    # The entities with a flagged amount as indices, gathered from each column (a boolean mask
    # compressed the 3 x 10^5 entities' columns again for each of the four sums).
    some = np.flatnonzero(legit[2] > 0)
    amount = legit[2][some]
    sums[2] = np.sort(amount).sum()
    for a in range(3):
        products[a, 2] = products[2, a] = np.sort(legit[a][some] * amount).sum()
    return sums, products


def read_entity_values(data: bytes, start: int) -> tuple[EntityValues, int]:
    """The entity values serialised from ``start`` (their first float gives their size), and
    where they end."""
    if len(data) < start + 8:
        raise InvalidInputError("sketch bytes end inside the entity values' size")
    (fraud_rows,) = struct.unpack_from("<d", data, start)
    if not (math.isfinite(fraud_rows) and 0 <= fraud_rows <= len(data)):
        raise InvalidInputError("inconsistent sketch entity values: size")
    stop = start + 8 * (1 + _WIDTH * int(fraud_rows) + 10)
    if len(data) < stop:
        raise InvalidInputError(f"sketch bytes have length {len(data)}, too short")
    values = np.frombuffer(data[start:stop], dtype="<f8").astype(np.float64)
    return EntityValues.of_array(values), stop


def pool_entity_values(parts: list[EntityValues | None]) -> EntityValues | None:
    """The entity values of windows pooled at their own threshold (an entity on two days is
    two entity-days, as for the entity sketch); None if a window has none."""
    kept = [p for p in parts if p is not None]
    if not kept or len(kept) != len(parts):
        return None
    fraud = np.concatenate([p.fraud for p in kept])
    fraud = fraud[np.lexsort(fraud.T[::-1])]
    sums = np.array([math.fsum(p.legit_sum[a] for p in kept) for a in range(3)])
    products = np.array(
        [[math.fsum(p.legit_products[a, b] for p in kept) for b in range(3)] for a in range(3)]
    )
    return EntityValues(
        fraud=frozen(np.ascontiguousarray(fraud)),
        legit_count=sum(p.legit_count for p in kept),
        legit_sum=frozen(sums),
        legit_products=frozen(products),
    )
