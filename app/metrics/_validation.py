"""Input checks done once, at the public entry points, as cheaply as the data allows.

Finiteness of the scores is checked on the sorted array (NaN sorts last, infinities sit at the
ends), so the common valid case costs no extra pass; only a failure scans for the culprit's index.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from app.metrics.errors import InvalidInputError
from app.metrics.types import Float64Array


def as_scores_and_labels(
    scores: npt.ArrayLike, labels: npt.ArrayLike
) -> tuple[Float64Array, npt.NDArray[np.bool_]]:
    """Return float64 scores and the positive mask after shape and label-value checks."""
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"scores must be real numbers: {exc}") from None
    y = np.asarray(labels)
    if s.ndim != 1 or y.ndim != 1:
        raise InvalidInputError(
            f"scores and labels must be 1-d arrays, got shapes {s.shape} and {y.shape}"
        )
    if s.size != y.size:
        raise InvalidInputError(
            f"length mismatch: {s.size} scores but {y.size} labels (one label per score)"
        )
    if s.size == 0:
        raise InvalidInputError("empty window: scores and labels have no rows")
    return s, positive_mask(y)


def positive_mask(y: npt.NDArray[np.generic]) -> npt.NDArray[np.bool_]:
    """Return ``labels == 1`` as booleans, raising unless every label is 0 or 1.

    Integer labels are checked with one reduction over their unsigned view (negative values
    become huge), then cast to bool: both far cheaper than ``flatnonzero`` on wide integers.
    """
    if y.dtype == np.bool_:
        return y  # type: ignore[return-value]
    if np.issubdtype(y.dtype, np.integer):
        unsigned = y.view(y.dtype.str.replace("i", "u"))  # keeps the byte order
        if int(unsigned.max()) <= 1:
            return y.astype(np.bool_)
    elif np.issubdtype(y.dtype, np.floating):
        if bool(np.all((y == 0) | (y == 1))):
            return y.astype(np.bool_)
    else:
        raise InvalidInputError(f"labels must be 0/1 numbers or booleans, got dtype {y.dtype}")
    bad = int(np.flatnonzero((y != 0) & (y != 1))[0])
    raise InvalidInputError(f"labels[{bad}] = {y[bad].item()!r}: labels must be 0 or 1")


def raise_first_non_finite(s: Float64Array) -> None:
    """Raise naming the first non-finite score (called only once a check has failed)."""
    bad = np.flatnonzero(~np.isfinite(s))
    if bad.size:
        i = int(bad[0])
        raise InvalidInputError(f"scores[{i}] is not finite ({s[i]})")


def check_threshold(threshold: float) -> float:
    """Return the threshold as a float; it must be a finite real number."""
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        raise InvalidInputError(f"threshold must be a real number, got {threshold!r}") from None
    if not math.isfinite(t):
        raise InvalidInputError(f"threshold must be finite, got {t}")
    return t


def check_pi0(pi0: float) -> float:
    """Return pi0 as a float; the reference prior must lie strictly inside (0, 1)."""
    try:
        p = float(pi0)
    except (TypeError, ValueError):
        raise InvalidInputError(f"pi0 must be a number in (0, 1), got {pi0!r}") from None
    if not 0.0 < p < 1.0:
        raise InvalidInputError(f"pi0 must lie strictly between 0 and 1, got {p}")
    return p
