"""The rule of which models a token sees, and which tokens an admin of some models may mint."""

from __future__ import annotations

import pytest

from app.services.model_access import ModelSet, matches, within


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("card", "card", True),
        ("card", "card-2", False),
        ("team-a-*", "team-a-card", True),
        ("team-a-*", "team-a-", True),
        ("team-a-*", "team-b-card", False),
        ("team-a-*", "team-a", False),
    ],
)
def test_matches(pattern: str, name: str, expected: bool) -> None:
    assert matches(pattern, name) is expected


@pytest.mark.parametrize(
    ("inner", "outer", "expected"),
    [
        ("team-a-card", "team-a-*", True),
        ("team-a-x*", "team-a-*", True),
        ("team-*", "team-a-*", False),
        ("team-a-*", "team-a-card", False),
        ("team-a-card", "team-a-card", True),
    ],
)
def test_within(inner: str, outer: str, expected: bool) -> None:
    assert within(inner, outer) is expected


def test_sets() -> None:
    everything, team_a = ModelSet(), ModelSet.of(["team-a-*", "shared"])
    assert everything.sees("anything")
    assert everything.covers(team_a)
    assert team_a.sees("shared")
    assert not team_a.sees("shared-2")
    assert not team_a.covers(everything)  # a scoped admin never mints a global token
    assert team_a.covers(ModelSet.of(["team-a-1", "shared"]))
    assert not team_a.covers(ModelSet.of(["team-a-1", "other"]))
    assert ModelSet.stored(team_a.column()) == team_a
    assert ModelSet.stored(None) == everything
    assert everything.listed() is None
