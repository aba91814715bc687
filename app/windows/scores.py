"""A window's scores counted on its model's bins (what the nowcast reads), and the bins: cut
once per model, from the first window with enough rows, and kept.

Counting happens outside any transaction, on the bins known when the window was read (or on
bins proposed from this window if the model has none). In the store transaction, under the
model's lock, :func:`settle_bins` stores proposed bins if the model still has none, and
re-dirties the windows stored before them, so that their scores are counted too. Only two
workers cutting a model's first bins at once can count on bins that lost: the loser counts
again (:func:`recount`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np

from app.db.metrics_tables import ScoreBins
from app.db.repositories.nowcast import NowcastRepository
from app.db.repositories.window_rows import SegmentRows
from app.db.types import utcnow
from app.metrics import ScoreHistogram, bin_edges
from app.metrics.mixture import edges_from_bytes, edges_to_bytes
from app.metrics.types import Float64Array
from app.monitoring.nowcast import MIN_BIN_ROWS
from app.windows.rows import window_parts


def stored_edges(repo: NowcastRepository, model_id: int) -> Float64Array | None:
    """The model's bin edges, if cut."""
    row = repo.score_bins(model_id)
    return edges_from_bytes(row.edges) if row is not None else None


def propose_edges(segments: Sequence[SegmentRows], threshold: float) -> Float64Array | None:
    """Bins from this window's scores (all of them), if it has enough rows."""
    scores = [s.scores for s in segments] + [s.unlabelled for s in segments]
    if sum(part.size for part in scores) < MIN_BIN_ROWS:
        return None
    return bin_edges(np.concatenate(scores), threshold)


def flagged(part: SegmentRows, threshold: float) -> int:
    """Rows at or above the threshold, labelled or not."""
    return int(np.count_nonzero(part.scores >= threshold)) + int(
        np.count_nonzero(part.unlabelled >= threshold)
    )


def counted_parts(
    segments: Sequence[SegmentRows], edges: Float64Array | None
) -> list[ScoreHistogram | None]:
    """The score counts of each of ``window_parts(segments)`` (None without edges): every
    segment's rows are counted once and the whole window is their sum, so that a window with
    segments costs one search per row, not two."""
    parts = window_parts(segments)
    if edges is None:
        return [None] * len(parts)
    each = {s.segment: ScoreHistogram.of(edges, s.scores, s.labels, s.unlabelled) for s in segments}
    if not each:
        empty = np.empty(0)
        return [ScoreHistogram.of(edges, empty, empty, empty)]
    whole = ScoreHistogram.pooled(list(each.values()))
    return [whole, *(each[part.segment] for part in parts[1:])]


def settle_bins(
    repo: NowcastRepository,
    model_id: int,
    window_start: datetime,
    proposed: Float64Array | None,
    rows_used: int,
) -> Float64Array | None:
    """The model's bins after this window: the stored ones, or ``proposed`` stored now (and the
    windows counted before re-dirtied)."""
    stored = stored_edges(repo, model_id)
    if stored is not None or proposed is None:
        return stored
    repo.add_score_bins(
        ScoreBins(
            model_id=model_id,
            edges=edges_to_bytes(proposed),
            window_start=window_start,
            rows_used=rows_used,
            created_at=utcnow(),
        )
    )
    repo.mark_uncounted_dirty(model_id, except_start=window_start)
    return proposed
