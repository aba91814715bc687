"""The one rule for a fraud rate someone types: a model's fixed pi0, a what-if rate, a ratio."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

MIN_PRIOR = 1e-300
"""The smallest fraud rate accepted: below the smallest normal double (2.2e-308) the
calibration's odds underflow and metrics come out NaN (schemathesis sent 5e-324: a 500; as a
model's fixed pi0 it broke every window of the model for good)."""


def check_prior(value: float | None) -> float | None:
    """A fraud rate the calibration can take: not below MIN_PRIOR."""
    if value is not None and 0.0 < value < MIN_PRIOR:
        raise ValueError(f"a fraud rate must be at least {MIN_PRIOR:g}")
    return value


OpenPrior = Annotated[float, Field(gt=0.0, lt=1.0), AfterValidator(check_prior)]
"""A fraud rate strictly between 0 and 1 that every metric can be calibrated to."""
