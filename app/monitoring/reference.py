"""The reference: the frozen "known good" windows each (model, segment) is judged against.

A trailing baseline forgets: after a week of a degraded model the degraded state is "normal" and
the page resolves while the model is still bad. So each segment is compared with a reference
that does not move by itself. A model's reference is *specified* once for all its segments and
versioned (:class:`ReferenceSpec`); each segment *freezes* its own windows under that spec as
soon as they exist (:func:`choose_reference`), and keeps them until the next version, which only
an explicit act creates (after a retrain, or to accept the current state as normal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.monitoring.maturity import MaturityRule
from app.monitoring.pi0 import WindowLabels
from app.monitoring.vocabulary import ReferenceKind


@dataclass(frozen=True)
class ReferenceSpec:
    """Which windows form the reference, for every segment of a model.

    ``automatic``: the first usable windows starting at ``start`` (the model's first window if
    None); ``period``: the usable windows starting in [``start``, ``end``); ``recent``: the
    newest usable windows starting before ``as_of`` (the moment the reference was set).
    """

    version: int
    kind: ReferenceKind
    start: datetime | None = None
    end: datetime | None = None
    as_of: datetime | None = None


@dataclass(frozen=True)
class ReferenceRule:
    """How much an automatic or recent reference holds (model settings)."""

    windows: int
    min_positives: int
    maturity: MaturityRule


@dataclass(frozen=True)
class ReferenceChoice:
    """The windows a segment's reference is made of, or why it is not ready yet."""

    windows: tuple[WindowLabels, ...]
    ready: bool
    reason: str

    @property
    def positives(self) -> int:
        """Labelled positives in the chosen windows."""
        return sum(w.positives for w in self.windows)


def usable(window: WindowLabels, rule: ReferenceRule) -> bool:
    """A window that can be part of a reference: mature, with positives to measure AP on."""
    return window.positives > 0 and rule.maturity.is_mature(window)


def choose_reference(
    spec: ReferenceSpec, rule: ReferenceRule, history: Sequence[WindowLabels]
) -> ReferenceChoice:
    """The segment's reference windows under ``spec``, given its stored windows' counts.

    An automatic reference is ready once it holds ``rule.windows`` usable windows and
    ``rule.min_positives`` positives (it grows past ``rule.windows`` until it does: a quiet segment
    needs more days for a reference that is precise enough to judge against). A period is ready
    once a mature window after it exists (the period's own labels then came in), a recent
    reference as soon as it has a usable window.
    """
    ordered = sorted(history, key=lambda w: w.window_start)
    candidates = [w for w in ordered if usable(w, rule)]
    if spec.kind == "automatic":
        return _first_enough(
            [w for w in candidates if spec.start is None or w.window_start >= spec.start], rule
        )
    if spec.kind == "period":
        chosen = tuple(
            w
            for w in candidates
            if (spec.start is None or w.window_start >= spec.start)
            and (spec.end is None or w.window_start < spec.end)
        )
        after = spec.end is not None and any(
            w.window_start >= spec.end and rule.maturity.is_mature(w) for w in ordered
        )
        if not chosen:
            return ReferenceChoice((), False, "no usable window in the reference period yet")
        if not after:
            return ReferenceChoice(
                chosen, False, "waiting for a mature window after the reference period"
            )
        return ReferenceChoice(chosen, True, _summary(chosen))
    before = [w for w in candidates if spec.as_of is None or w.window_start < spec.as_of]
    picked = _first_enough(before[::-1], rule)
    chosen = tuple(reversed(picked.windows))
    if not chosen:
        return ReferenceChoice((), False, "no usable window before the reference was set")
    return ReferenceChoice(chosen, True, _summary(chosen))


def _first_enough(ordered: Sequence[WindowLabels], rule: ReferenceRule) -> ReferenceChoice:
    chosen: list[WindowLabels] = []
    positives = 0
    for window in ordered:
        chosen.append(window)
        positives += window.positives
        if len(chosen) >= rule.windows and positives >= rule.min_positives:
            return ReferenceChoice(tuple(chosen), True, _summary(chosen))
    return ReferenceChoice(
        tuple(chosen),
        False,
        f"collecting the reference: {len(chosen)} of {rule.windows} usable windows, "
        f"{positives} of {rule.min_positives} positives",
    )


def _summary(chosen: Sequence[WindowLabels]) -> str:
    positives = sum(w.positives for w in chosen)
    return f"{len(chosen)} windows, {positives} positives"
