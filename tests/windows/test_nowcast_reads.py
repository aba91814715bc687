"""The nowcast pass's reads of every segment at once (issue 29: one query where it made one per
segment) select what the per-segment filters say, on both backends: each segment's windows
after its reference with score counts and no nowcast against its version, newest first, at most
``limit``; and each span's counts within its dates, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session

from app.db.repositories.nowcast import NowcastRepository, SegmentSpan
from tests.support.worker_data import new_model
from tests.support.worker_output import add_window_metrics

FIRST = datetime(2025, 3, 1, tzinfo=UTC)


def test_every_segments_backlog_and_counts_in_one_read(db_session: Session) -> None:
    model_id = new_model(db_session, "reads").id
    rng = np.random.default_rng(29)
    stored: dict[tuple[str, datetime], dict[str, object]] = {}
    for segment in ("all", "s0", "s1"):
        for day in range(12):
            start = FIRST + timedelta(days=day)
            fields: dict[str, object] = {
                "segment": segment,
                "score_counts": None if rng.random() < 0.15 else f"{segment}{day}".encode(),
                "flagged": int(rng.integers(0, 5)),
                "nowcast_reference_version": [None, 1, 2][int(rng.integers(0, 3))],
                "judged_at": FIRST if rng.random() < 0.3 else None,
            }
            add_window_metrics(db_session, model_id, start, counts=(100, 90, 3), **fields)
            stored[(segment, start)] = fields
    after = {"all": FIRST + timedelta(days=2), "s0": FIRST - timedelta(days=1), "s1": FIRST}
    spans = [SegmentSpan(s, after=a, version=2) for s, a in after.items()]
    repo = NowcastRepository(db_session)

    backlogs = repo.backlogs(model_id, spans, limit=4)
    for segment, last in after.items():
        expected = sorted(
            (
                start
                for (s, start), f in stored.items()
                if s == segment
                and start > last
                and f["score_counts"] is not None
                and f["nowcast_reference_version"] != 2
            ),
            reverse=True,
        )[:4]
        got = backlogs.get(segment, [])
        assert [w.labels.window_start for w in got] == expected
        for window in got:
            fields = stored[(segment, window.labels.window_start)]
            assert window.flagged == fields["flagged"]
            assert window.judged == (fields["judged_at"] is not None)
            assert (window.labels.labelled, window.labels.positives) == (90, 3)

    since, until = FIRST + timedelta(days=3), FIRST + timedelta(days=9)
    around = [SegmentSpan(s, after=a, since=since, until=until) for s, a in after.items()]
    counts = repo.counts_of_spans(model_id, around)
    for segment, last in after.items():
        expected_counts = [
            (start, f["score_counts"])
            for (s, start), f in sorted(stored.items(), key=lambda item: item[0][1])
            if s == segment
            and start > last
            and since <= start <= until
            and f["score_counts"] is not None
        ]
        assert counts.get(segment, []) == expected_counts
