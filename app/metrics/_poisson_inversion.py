"""Poisson counts of a small mean by inverting one uniform: 2-7x faster than numpy's sampler.

numpy's ``Generator.poisson`` draws a mean below 10 by the multiplication method (about
``mean + 1`` uniforms a count) and a larger one by transformed rejection: 40-90 ns a count for
the means a bootstrap meets (1 for a card's weight, 5-25 for a merged block's frauds). Inverting
one uniform against the cumulative probabilities, started from a guide table (Chen and Asau
1974: the smallest count whose cumulative probability passes ``g / G``, for ``G`` four times
the table's length), takes one lookup and about one comparison a count: 10-15 ns.

The table stops where the probability left is far below a double's resolution
(``mean + 10 sqrt(mean) + 12``; for a mean of 1, P(X > 23) is 1e-23); that last count takes
the remainder, so the draws follow the Poisson distribution exactly but for that tail.

A mean met again and again (a bootstrap's means are counts of rows: few distinct integers)
keeps its table (:func:`poisson_inverted`); means that are each met once (a null model's
expected counts, real numbers) get their tables built together, one row a mean, for one draw
(:func:`poisson_columns`, about twice as fast as numpy's sampler with the building).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import gammaln

from app.metrics.types import Float64Array

_GUIDE_PER_COUNT = 4
NORMAL_ABOVE = 30.0
"""Poisson means from here on are drawn as normals (as the bootstrap does: see
app/metrics/bootstrap.py's ``normal_above``)."""


@lru_cache(maxsize=256)
def _tables(mean: float) -> tuple[Float64Array, np.ndarray[tuple[int], np.dtype[np.intp]]]:
    """The cumulative probabilities of Poisson(``mean``) and their guide table."""
    last = int(mean + 10.0 * math.sqrt(mean) + 12.0)
    counts = np.arange(last + 1, dtype=np.float64)
    log_pmf = -mean + counts * math.log(mean) - np.array([math.lgamma(k + 1.0) for k in counts])
    cdf: Float64Array = np.cumsum(np.exp(log_pmf))
    cdf[-1] = 1.0  # the tail beyond the table (and the sum's rounding) goes to the last count
    size = _GUIDE_PER_COUNT * cdf.size
    guide = np.searchsorted(cdf, np.arange(size) / size, side="right")
    cdf.flags.writeable = False
    guide.flags.writeable = False
    return cdf, guide


def poisson_inverted(mean: float, size: tuple[int, int], rng: np.random.Generator) -> Float64Array:
    """A ``size`` array of independent Poisson(``mean``) counts (as floats), one uniform each;
    ``mean`` > 0 (a bootstrap's means are at most its normal threshold, 30)."""
    return inverse_poisson(rng.random(size), mean)


def inverse_poisson(u: Float64Array, mean: float) -> Float64Array:
    """The Poisson(``mean``) count of each uniform ``u`` in [0, 1): the smallest ``k`` whose
    cumulative probability exceeds it."""
    cdf, guide = _tables(float(mean))
    flat = u.reshape(-1)
    # u * G may round up to G itself for u just below 1.
    count = guide[np.minimum((flat * guide.size).astype(np.intp), guide.size - 1)]
    # The guide's count is at or below the answer: step up while the uniform is not below.
    pending = np.flatnonzero(flat >= cdf[count])
    while pending.size:
        count[pending] += 1
        pending = pending[flat[pending] >= cdf[count[pending]]]
    drawn: Float64Array = count.astype(np.float64).reshape(u.shape)
    return drawn


def poisson_columns(means: Float64Array, rows: int, rng: np.random.Generator) -> Float64Array:
    """A ``(rows, means.size)`` array of independent Poisson counts (as floats), column ``j``
    of mean ``means[j]`` (0 <= mean, at most a bootstrap's normal threshold, 30), one uniform
    each: the tables of :func:`inverse_poisson`, one row a mean, stacked."""
    cdf, guide = _column_tables(np.asarray(means, dtype=np.float64))
    columns, length = cdf.shape
    u = rng.random((rows, columns))
    cell = (u * length).astype(np.intp)  # the guide has one entry a count: ``G`` = the length
    np.minimum(cell, length - 1, out=cell)  # u * G may round up to G itself for u just below 1
    cell += np.arange(columns) * length
    at = guide[cell]  # each count as its index in the flattened table
    flat_cdf, flat_u, flat_at = cdf.reshape(-1), u.reshape(-1), at.reshape(-1)
    pending = np.flatnonzero(flat_u >= flat_cdf[flat_at])
    while pending.size:
        flat_at[pending] += 1
        pending = pending[flat_u[pending] >= flat_cdf[flat_at[pending]]]
    at -= np.arange(columns) * length
    drawn: Float64Array = at.astype(np.float64)
    return drawn


def poisson_or_normal(means: Float64Array, rows: int, rng: np.random.Generator) -> Float64Array:
    """A ``(rows, means.size)`` array of independent Poisson counts (as floats), column ``j``
    of mean ``means[j]`` >= 0: normal (``mean + sqrt(mean) z``, at least 0) from
    :data:`NORMAL_ABOVE` on, the smaller means by :func:`poisson_columns` (a null model's
    expected counts, a nowcast's bins: each mean met once)."""
    out = np.empty((rows, means.size))
    large = means >= NORMAL_ABOVE
    if large.any():
        m = means[large]
        z = rng.standard_normal((rows, m.size), dtype=np.float32)
        out[:, large] = np.maximum(m + np.sqrt(m) * z, 0)
    if not large.all():
        out[:, ~large] = poisson_columns(means[~large], rows, rng)
    return out


def _column_tables(
    means: Float64Array,
) -> tuple[Float64Array, np.ndarray[tuple[int], np.dtype[np.intp]]]:
    """The cumulative probabilities of Poisson(``means[j]``), one row each and all as long as
    the largest mean's table, and their guide tables flattened: entry ``j G + g`` is the
    index in the flattened probabilities of row ``j``'s smallest count whose cumulative
    probability reaches ``g / G`` (``G`` the rows' length), or one below it."""
    top = float(means.max(initial=0.0))
    length = int(top + 10.0 * math.sqrt(top) + 12.0) + 1
    counts = np.arange(length, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # a mean of 0: log 0, 0 * -inf
        log_pmf = counts * np.log(means)[:, None] - means[:, None] - gammaln(counts + 1.0)
    log_pmf[:, 0] = -means  # P(0) = e^-mean, also for a mean of 0 (every count 0)
    cdf: Float64Array = np.cumsum(np.exp(log_pmf), axis=1)
    cdf[:, -1] = 1.0  # the tail beyond the table (and the sum's rounding) goes to the last count
    # One search for every row's guide: rows shifted apart by 2 (each lies in [0, 1]). The
    # shift rounds, so a probability just above g / G may tie with it: searching for the first
    # that is not below keeps each guide at or below its count (the draw steps up from it).
    shift = 2.0 * np.arange(means.size)[:, None]
    guide = np.searchsorted(
        (cdf + shift).reshape(-1), (counts / length + shift).reshape(-1), side="left"
    )
    return cdf, guide
