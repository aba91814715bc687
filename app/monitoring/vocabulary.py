"""The one vocabulary of calmon's judgements: every enumerated word, once.

The database's CHECK constraints, the API's schemas, the worker and the Prometheus collector all
take their values from here (the tuples are derived from the ``Literal`` types, so the two cannot
disagree).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from types import MappingProxyType
from typing import Final, Literal, cast, get_args

Granularity = Literal["hour", "day", "week"]
GRANULARITIES: Final[tuple[Granularity, ...]] = get_args(Granularity)
WINDOW_LENGTH: Final[Mapping[Granularity, timedelta]] = MappingProxyType(
    {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
)
"""A window's nominal length (a local day across a DST change lasts 23 or 25 hours)."""

Pi0PolicyName = Literal["historical", "reference", "fixed"]
PI0_POLICIES: Final[tuple[Pi0PolicyName, ...]] = get_args(Pi0PolicyName)

Verdict = Literal[
    "stable",
    "prior_shift",
    "performance_drop",
    "performance_gain",
    "both",
    "insufficient_data",
    "reference",
    "score_shift",
]
"""A window segment's verdict, issued once when the window is mature (see app/monitoring).
``score_shift`` is provisional only: an unjudged window whose scores the reference's mixture does
not explain (app/monitoring/nowcast.py); its issued verdict replaces it once labels are in."""
VERDICTS: Final[tuple[Verdict, ...]] = get_args(Verdict)
DROP_VERDICTS: Final[frozenset[Verdict]] = frozenset({"performance_drop", "both"})

AlertState = Literal["warming_up", "ok", "drop"]
"""A (model, segment)'s alert state: no reference yet, judged and fine, or paging."""
ALERT_STATES: Final[tuple[AlertState, ...]] = get_args(AlertState)

Signal = Literal["cusum", "floor", "early"]
"""What put a segment in the drop state: accumulated evidence of a deficit against the
reference (judged windows), the calibrated AP's interval lying wholly under the model's alert
floor, or the same evidence continued through the windows whose labels are still arriving
(app/monitoring/early.py)."""
SIGNALS: Final[tuple[Signal, ...]] = get_args(Signal)


def stored_signals(signals: Sequence[Signal]) -> str:
    """Signals as the ``alert_states.signals`` column keeps them: comma-separated, "" for none."""
    return ",".join(signals)


def signals_of(stored: str) -> tuple[Signal, ...]:
    """The signals an ``alert_states.signals`` value holds (:func:`stored_signals`' inverse)."""
    return tuple(cast(Signal, s) for s in stored.split(",") if s)


ReferenceKind = Literal["automatic", "period", "recent"]
"""How a reference is chosen: the first usable windows (from a date), an explicit period, or the
most recent usable windows when it was set ("accept the current state as normal")."""
REFERENCE_KINDS: Final[tuple[ReferenceKind, ...]] = get_args(ReferenceKind)

SEGMENT_ALL: Final = "all"
"""The segment name of a whole window."""

LabelSource = Literal["feedback", "chargeback", "confirmed"]
"""Where a label came from, which says what its absence means:

- ``feedback``: an investigator's verdict on an alert; it covers flagged rows only, so an
  unflagged row without one is not known to be legitimate;
- ``chargeback``: a dispute or claim, which can arrive months after the payment;
- ``confirmed``: any other definitive outcome (the default when a label names no source).
"""
LABEL_SOURCES: Final[tuple[LabelSource, ...]] = get_args(LabelSource)
DEFAULT_LABEL_SOURCE: Final[LabelSource] = "confirmed"
LABEL_SOURCE_CODES: Final[Mapping[LabelSource, int]] = MappingProxyType(
    {"feedback": 1, "chargeback": 2, "confirmed": 3}
)
"""The smallint stored per row in ``predictions.label_source`` (the hot table: 10^7+ rows, so a
code rather than a word)."""
LABEL_SOURCE_NAMES: Final[Mapping[int, LabelSource]] = MappingProxyType(
    {code: name for name, code in LABEL_SOURCE_CODES.items()}
)
UNKNOWN_LABEL_SOURCE: Final = 0
"""The source code of a label stored before sources were (migration 0013), or of no label."""
UNKNOWN_LABEL_TIME: Final = -(2**63)
"""Epoch microseconds standing for "no label time": a label stored before label times were
(migration 0013; when it arrived is unknown and is not invented), a row without a label, or a
label sent without ``labelled_at`` (before the default is applied). ``np.iinfo(np.int64).min``:
it sorts before every real instant, so a maximum over label times ignores it."""
