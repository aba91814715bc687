"""The type aliases shared by the kernel and its callers, each defined once.

An array alias names its element type: most arrays are exactly float64 (``Float64Array``), but
the kernel's formulas also run on float32 bootstrap replicates, so they take ``FloatingArray``
(float32 or float64).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Float64Array = npt.NDArray[np.float64]
Float32Array = npt.NDArray[np.float32]
FloatingArray = npt.NDArray[np.floating[Any]]
Int64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

Interval = tuple[float, float]
"""A closed range ``(low, high)``: a confidence interval, or a range of priors."""
