"""Which models a token may see: a set of names and name prefixes (``team-a-*``), or all.

One team's token must not read, write or even learn of another team's models, so every check
that a caller may touch a model goes through ``ModelSet.sees``, and a model outside the set is
reported exactly as a model that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

WILDCARD = "*"


def matches(pattern: str, name: str) -> bool:
    """Whether ``name`` is ``pattern``, or starts with its prefix if it ends in ``*``."""
    if pattern.endswith(WILDCARD):
        return name.startswith(pattern[:-1])
    return name == pattern


def within(inner: str, outer: str) -> bool:
    """Whether every name ``inner`` matches is matched by ``outer``."""
    if outer.endswith(WILDCARD):
        return inner.startswith(outer[:-1])
    return inner == outer


@dataclass(frozen=True)
class ModelSet:
    """The models a token may see; ``patterns`` None means every model."""

    patterns: frozenset[str] | None = None

    @classmethod
    def of(cls, patterns: Iterable[str] | None) -> ModelSet:
        """The set of ``patterns`` (None: every model)."""
        return cls(None if patterns is None else frozenset(patterns))

    @classmethod
    def stored(cls, column: str | None) -> ModelSet:
        """The set kept in a token row's ``models`` column (comma-separated, NULL for all)."""
        return cls.of(None if column is None else [p for p in column.split(",") if p])

    @property
    def everything(self) -> bool:
        """True for a global token."""
        return self.patterns is None

    def sees(self, name: str) -> bool:
        """Whether a token with this set may see the model ``name``."""
        return self.patterns is None or any(matches(p, name) for p in self.patterns)

    def covers(self, other: ModelSet) -> bool:
        """Whether every model ``other`` sees is one this set sees (an admin may mint a token
        only within its own models)."""
        if self.patterns is None:
            return True
        if other.patterns is None:
            return False
        return all(any(within(p, q) for q in self.patterns) for p in other.patterns)

    def column(self) -> str | None:
        """The stored form (see ``stored``)."""
        return None if self.patterns is None else ",".join(sorted(self.patterns))

    def listed(self) -> list[str] | None:
        """The public form: the patterns sorted, or None for every model."""
        return None if self.patterns is None else sorted(self.patterns)
