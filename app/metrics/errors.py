"""The one error the kernel raises for bad input."""

from __future__ import annotations


class InvalidInputError(ValueError):
    """Scores, labels or parameters the kernel cannot evaluate; the message says what and where."""
