"""Net savings' intervals, studentized (the bootstrap-t), from the bootstrap's own replicates.

Net savings is a sum of money over the window's frauds (its fraud cards, when rows name them):
at 10 to 25 of them a heavy-tailed sum of a few large amounts, and skewed. A percentile
interval of a skewed sum of few units is placed wrongly as well as too narrow (a window that
missed the rare large fraud reads an upper end too low), and widening its tails for few units
(app/metrics/percentiles.py) corrects the width only: with the card bootstrap its 95% intervals
held the truth 76-91% of the time at 10-25 frauds a window (docs/alert-budget.md). The
bootstrap-t (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 12; among the
better alternatives Hesterberg 2015 names for skewed data) divides each replicate's distance
from the window's value by the replicate's own standard error and reads the interval from
those t values, which carries the skew into the interval: ``[value - t_hi se, value - t_lo
se]``.

A standard error needs no second bootstrap here. Under the Poisson bootstrap a replicate is a
weighted sum of the cards' sums (weight w_i, the card's count), so the linearised variance of
net savings in replicate b is ``g_b' S_b g_b``: ``S_b`` the weighted sums of the cards' pairwise
products (app/metrics/sketch_entity_values.py, :meth:`EntityValues.draw_spread`) and ``g_b`` net
savings' gradient in the five sums it depends on, at replicate b's sums:

* regular: ``C - r (TP + FP)`` (C: fraud amount caught, r: the review cost, TP and FP the flagged
  frauds and legitimate rows), gradient ``(0, -r, 1, 0, -r)`` in ``(P, TP, C, N, FP)``;
* calibrated to pi0, in kernel units (app/metrics/_budget_kernel.py: positives weigh
  ``n / M``, negatives ``k n / M``, ``M = P + k N``, ``k = (P / N) (1 - pi0) / pi0``):
  ``pi0 n / P (C - r TP) - r (1 - pi0) n / N FP`` with ``n = P + N``.

The row bootstrap (a window whose rows name no card) is the same with every row its own unit:
a fraud row's sums are ``(1, f, a f)`` (f: flagged, a: its amount), a legitimate row's
``(1, f)``, so a replicate's products are its own sums except the caught amount's square,
``sum of C a^2`` over the flagged entries, which it takes from each entry's drawn count and the
mean square of its amounts (exact where an entry holds one fraud, as at 10 to 25 frauds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.metrics._kernel import ReplicateCounts
from app.metrics._resampling import AmountSpread
from app.metrics.percentiles import PercentileCut
from app.metrics.sketch import CurveSketch
from app.metrics.sketch_entity_values import SPREAD
from app.metrics.types import FloatingArray, Interval

Offsets = tuple[float, float] | None
"""An interval's ends relative to the window's value (None: no interval)."""
_P, _TP, _C, _N, _FP = range(5)  # positions in SPREAD, the columns of the seven sums used


def standard_error(
    sums: FloatingArray, spread: FloatingArray, review_cost: float, priors: Sequence[float | None]
) -> FloatingArray:
    """Net savings' linearised standard error at each of ``priors`` (None: regular) and per
    row, ``(G, R)``: ``sums`` ``(R, 7)``, ``spread`` their :data:`SPREAD` columns' pairwise
    product sums ``(R, 5, 5)``; NaN where undefined."""
    p, tp, c, n_, fp = sums[:, SPREAD].T
    r = review_cost
    with np.errstate(divide="ignore", invalid="ignore"):
        n = p + n_
        caught_net = c - r * tp
        # The calibrated gradient (module docstring) is linear in pi0: g = pi0 a + (1 - pi0) b
        # per row, so g' S g = pi0^2 a'Sa + 2 pi0 (1 - pi0) a'Sb + (1 - pi0)^2 b'Sb, three
        # numbers a row whatever the priors (a (G, R, 5) gradient and its einsum took 1.2-2.7 ms
        # a call at 1,000 replicates and 18 priors; these forms, 0.36 ms).
        zero = np.zeros_like(p)
        a = np.stack([-caught_net * n_ / p**2, -r * n / p, n / p, caught_net / p, zero], axis=1)
        b = np.stack([-r * fp / n_, zero, zero, r * fp * p / n_**2, -r * n / n_], axis=1)
        regular = np.broadcast_to(np.array([0.0, -r, 1.0, 0.0, -r]), a.shape)
        forms = [_form(spread, x, y) for x, y in ((a, a), (a, b), (b, b), (regular, regular))]
        out = np.empty((len(priors), sums.shape[0]))
        for g, pi0 in enumerate(priors):
            if pi0 is None:
                out[g] = forms[3]
            else:
                out[g] = pi0 * pi0 * forms[0] + 2.0 * pi0 * (1.0 - pi0) * forms[1]
                out[g] += (1.0 - pi0) * (1.0 - pi0) * forms[2]
    error: FloatingArray = np.sqrt(np.clip(out, 0.0, None))
    return error


def _form(spread: FloatingArray, x: FloatingArray, y: FloatingArray) -> FloatingArray:
    """``x_b' S_b y_b`` per row ``b``: ``x``, ``y`` ``(R, 5)``, ``spread`` ``(R, 5, 5)``."""
    form: FloatingArray = np.einsum("bi,bij,bj->b", x, spread, y)
    return form


def t_offsets(
    replicates: FloatingArray,
    errors: FloatingArray,
    window: tuple[FloatingArray, FloatingArray],
    level: float,
) -> list[Offsets]:
    """Per row of ``replicates`` and ``errors`` ``(G, R)`` (the replicates' values and
    standard errors): the studentized interval's ends relative to the window's value, ``(-t_hi
    se, -t_lo se)``; ``window``: its values and errors ``(G,)``, from the same sums. None where
    the window's error is undefined or more than ``(1 - level) / 2`` of the replicates have no
    t value (the percentile cut's rule for undefined replicates, and its quantiles)."""
    bases, window_errors = window
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (replicates - bases[:, None]) / errors
    rows = len(bases)
    cuts = PercentileCut(replicates.shape[1], level).intervals(
        [[row] for row in t], [0.0] * rows, [0.0] * rows
    )
    out: list[Offsets] = []
    for base, error, cut in zip(bases.tolist(), window_errors.tolist(), cuts, strict=True):
        if not (math.isfinite(error) and math.isfinite(base)):
            out.append(None)
        elif error == 0.0:  # no unit's weight moves it: no spread to read
            out.append((0.0, 0.0))
        else:
            out.append(None if cut is None else (-cut[1] * error, -cut[0] * error))
    return out


@dataclass(frozen=True)
class SumDraws:
    """Replicates' seven sums ``(R, 7)`` (app.metrics.sketch_entity_values.COLUMNS) and
    spreads ``(R, 5, 5)``, the window's own (``(1, 7)``, ``(1, 5, 5)``), and the review cost
    and level at which net savings' interval is read."""

    totals: FloatingArray
    spread: FloatingArray
    window: FloatingArray
    window_spread: FloatingArray
    review_cost: float
    level: float

    def at_priors(
        self, drawn: list[FloatingArray], bases: list[float], priors: list[float]
    ) -> tuple[Offsets, list[Offsets]]:
        """Net savings' interval ends around its value (:func:`t_offsets`), regular and at
        each of ``priors``: ``drawn`` and ``bases`` hold the regular replicates' values (the
        kernel's) and the value of the sums they were drawn from first, then those calibrated
        to each prior."""
        at: list[float | None] = [None, *priors]
        # The replicates' errors and the window's in one call (each row's its own floats).
        replicates = self.totals.shape[0]
        errors = standard_error(
            np.concatenate([self.totals, self.window]),
            np.concatenate([self.spread, self.window_spread]),
            self.review_cost,
            at,
        )
        found = t_offsets(
            np.stack(drawn),
            errors[:, :replicates],
            (np.asarray(bases, dtype=np.float64), errors[:, replicates]),
            self.level,
        )
        return found[0], found[1:]


def row_sums(drawn: ReplicateCounts, amounts: AmountSpread) -> tuple[FloatingArray, FloatingArray]:
    """The seven sums and spread of row-bootstrap replicates (see the module docstring):
    ``drawn`` the replicates' counts on the (merged) entries, ``amounts`` the moments they
    drew their amounts from."""
    j = int(drawn.threshold_index) + 1
    if drawn.amounts is None:
        raise ValueError("row sums need replicates drawn with amounts")
    positives = drawn.positives_at.astype(np.float64)
    negatives = (drawn.negatives_tied + drawn.negatives_between).astype(np.float64)
    mean = amounts.positive.mean[:j].astype(np.float64)
    return _sums_and_spread(
        np.stack(
            [
                positives.sum(axis=1),
                positives[:, :j].sum(axis=1),
                drawn.amounts.positive_at[:, :j].sum(axis=1, dtype=np.float64),
                positives[:, :j] @ (mean * mean + amounts.positive.variance[:j]),
                negatives.sum(axis=1) + drawn.negatives_below,
                negatives[:, :j].sum(axis=1),
            ]
        )
    )


def window_sums(sketch: CurveSketch) -> tuple[FloatingArray, FloatingArray]:
    """:func:`row_sums` for the window itself, from its exact sketch (amounts required)."""
    amounts = sketch.amounts
    if amounts is None:
        raise ValueError("window sums need a sketch with amounts")
    j = sketch.threshold_index + 1
    negatives = sketch.negatives_tied + sketch.negatives_between
    column = [
        sketch.positives_at.sum(),
        sketch.positives_at[:j].sum(),
        amounts.positive_at[:j].sum(),
        amounts.positive_sq_at[:j].sum(),
        negatives.sum() + sketch.negatives_below,
        negatives[:j].sum(),
    ]
    return _sums_and_spread(np.array(column, dtype=np.float64)[:, None])


def _sums_and_spread(columns: FloatingArray) -> tuple[FloatingArray, FloatingArray]:
    """Sums ``(R, 7)`` and spread ``(R, 5, 5)`` of replicates whose every row is a unit, from
    ``(6, R)`` columns: frauds, flagged frauds, amount caught, its squares, legitimate rows,
    flagged legitimate rows."""
    positives, flagged, caught, caught_squares, negatives, flagged_negatives = columns
    zero = np.zeros_like(positives)
    totals = np.stack([positives, flagged, caught, zero, negatives, flagged_negatives, zero], 1)
    spread = np.zeros((positives.size, 5, 5))
    for (a, b), value in {
        (_P, _P): positives,
        (_P, _TP): flagged,
        (_TP, _TP): flagged,
        (_P, _C): caught,
        (_TP, _C): caught,
        (_C, _C): caught_squares,
        (_N, _N): negatives,
        (_N, _FP): flagged_negatives,
        (_FP, _FP): flagged_negatives,
    }.items():
        spread[:, a, b] = spread[:, b, a] = value
    return totals, spread


def around(value: float | None, offsets: Offsets) -> Interval | None:
    """An interval from its ends relative to ``value`` (None where either is)."""
    if value is None or offsets is None:
        return None
    return (value + offsets[0], value + offsets[1])
