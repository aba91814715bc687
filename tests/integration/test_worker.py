"""The worker against a real database (SQLite and PostgreSQL): compute, store, re-dirty, pi0.

Windows are written straight into the database (tests/support/worker_data.py); the end-to-end
tests post the same streams over HTTP to real processes.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.db.metrics_tables import Pi0Version, WindowMetrics, WindowMetricValue
from app.db.repositories.window_queue import WindowQueueRepository
from app.db.tables import Prediction, Window
from app.db.types import utcnow
from app.metrics import METRIC_NAMES, CurveSketch, InvalidInputError, bootstrap
from app.metrics.prior_grid import IntervalGrid
from app.services.metrics import status
from app.windows.compute import ComputeOptions, LeaseLostError, compute_claim
from app.windows.evaluation import seed_for
from app.worker.loop import PARK_AFTER_ATTEMPTS, Worker, WorkerConfig, is_deterministic
from tests.support.streams import StreamSpec, day_start, gaussian_window, stream
from tests.support.worker_data import (
    add_model,
    insert_day,
    insert_rows,
    mark_dirty,
    set_labels,
    window_versions,
)

FAST = ComputeOptions(replicates=200)


def _worker(session_factory: sessionmaker[Session], **config: object) -> Worker:
    return Worker(session_factory, WorkerConfig(options=FAST, **config))  # type: ignore[arg-type]


def _rows(session_factory: sessionmaker[Session], segment: str = "all") -> list[WindowMetrics]:
    with session_factory() as session:
        return list(
            session.scalars(
                select(WindowMetrics)
                .where(WindowMetrics.segment == segment)
                .order_by(WindowMetrics.window_start)
            )
        )


def test_windows_are_computed_per_segment_and_stored(
    session_factory: sessionmaker[Session],
) -> None:
    model_id = add_model(session_factory, reference_windows=2, reference_min_positives=20)
    spec = StreamSpec("prior_drift", days=5, rows_per_day=4_000, pi_low=0.02, pi_high=0.05)
    for day in stream(spec):
        insert_day(session_factory, model_id, day, segments=2)
    worker = _worker(session_factory)
    assert worker.drain() == 5
    assert all(d == c for d, c in window_versions(session_factory, model_id).values())

    whole = _rows(session_factory)
    assert [r.segment for r in whole] == ["all"] * 5
    assert {r.segment for r in _rows(session_factory, "s0") + _rows(session_factory, "s1")} == {
        "s0",
        "s1",
    }
    with session_factory() as session:
        version = session.scalars(select(Pi0Version).order_by(Pi0Version.version.desc())).first()
        values = session.scalars(select(WindowMetricValue)).all()
    assert version is not None
    assert len(values) == 5 * 3 * len(METRIC_NAMES)
    for row in whole:
        assert row.rows_total == 4_000
        assert row.labelled == 4_000
        assert row.pi0 == version.value
        assert row.pi0_version == version.version
        assert row.sketch is not None
        assert row.result is not None
        assert row.intervals is not None
        assert row.intervals["replicates"] == 200
    # The first two windows form the reference; the later ones are judged against it.
    assert [r.verdict for r in whole[:2]] == ["reference", "reference"]
    assert all(r.judged_at is not None for r in whole)
    assert all(r.verdict in {"stable", "prior_shift"} for r in whole[2:]), [
        (r.verdict, r.verdict_reason) for r in whole
    ]
    assert all(r.evidence is not None and "z" in r.evidence for r in whole[2:])
    ap = [v for v in values if v.metric == "average_precision" and v.segment == "all"]
    assert all(v.calibrated_ci_low is not None and v.calibrated_ci_high is not None for v in ap)
    assert all(v.calibrated_ci_low <= v.calibrated <= v.calibrated_ci_high for v in ap)  # type: ignore[operator]


def _one_window(sf: sessionmaker[Session], *, seed: int, rows: int) -> int:
    """A model at a fixed pi0 of 0.03 with one dirty, labelled window on day 0; its id."""
    model_id = add_model(sf, pi0_policy="fixed", pi0_fixed=0.03)
    scores, labels = gaussian_window(np.random.default_rng(seed), rows, 0.03, 2.0)
    insert_rows(sf, model_id, day_start(0), scores, labels)
    return model_id


def test_recomputing_a_window_is_idempotent(session_factory: sessionmaker[Session]) -> None:
    model_id = _one_window(session_factory, seed=1, rows=3_000)
    worker = _worker(session_factory)
    worker.drain()
    before = _rows(session_factory)[0]
    with session_factory.begin() as session:
        mark_dirty(session, model_id, day_start(0))
    assert worker.drain() == 1
    after = _rows(session_factory)[0]
    assert after.source_version == before.source_version + 1
    assert after.result == before.result
    assert after.intervals == before.intervals  # the bootstrap seed is fixed per window
    assert after.sketch == before.sketch


def test_a_window_redirtied_during_its_computation_is_computed_again(
    session_factory: sessionmaker[Session],
) -> None:
    model_id = _one_window(session_factory, seed=2, rows=2_000)
    with session_factory.begin() as session:
        claim = WindowQueueRepository(session).claim_next("w1", timedelta(minutes=1), utcnow())
    assert claim is not None
    # Ingest lands between the claim and the store.
    with session_factory.begin() as session:
        mark_dirty(session, model_id, day_start(0))
    compute_claim(session_factory, claim, "w1", FAST)
    assert window_versions(session_factory, model_id)[day_start(0)] == (2, 1)
    assert _worker(session_factory).drain() == 1
    assert window_versions(session_factory, model_id)[day_start(0)] == (2, 2)


def test_an_expired_lease_is_taken_over_and_the_old_owner_cannot_store(
    session_factory: sessionmaker[Session],
) -> None:
    model_id = _one_window(session_factory, seed=3, rows=2_000)
    lease = timedelta(seconds=30)
    now = utcnow()
    with session_factory.begin() as session:
        dead = WindowQueueRepository(session).claim_next("dead", lease, now)
    with session_factory.begin() as session:
        assert (
            WindowQueueRepository(session).claim_next("other", lease, now) is None
        )  # still leased
    with session_factory.begin() as session:
        taken = WindowQueueRepository(session).claim_next(
            "other", lease, now + lease + timedelta(1)
        )
    assert dead is not None
    assert taken is not None
    assert taken.window_start == dead.window_start
    assert taken.attempts == 2
    with pytest.raises(LeaseLostError):
        compute_claim(session_factory, dead, "dead", FAST)
    assert window_versions(session_factory, model_id)[day_start(0)] == (1, 0)
    compute_claim(session_factory, taken, "other", FAST)
    assert window_versions(session_factory, model_id)[day_start(0)] == (1, 1)


def test_a_failing_window_is_recorded_backed_off_and_skipped(
    session_factory: sessionmaker[Session],
) -> None:
    model_id = add_model(session_factory, pi0_policy="fixed", pi0_fixed=0.03)
    rng = np.random.default_rng(4)
    scores, labels = gaussian_window(rng, 1_000, 0.03, 2.0)
    scores[7] = np.inf  # the kernel refuses non-finite scores
    insert_rows(session_factory, model_id, day_start(0), scores, labels, prefix="bad")
    scores, labels = gaussian_window(rng, 1_000, 0.03, 2.0)
    insert_rows(session_factory, model_id, day_start(1), scores, labels, prefix="good")
    worker = _worker(session_factory, backoff_base=60.0)
    assert worker.drain() == 2
    assert worker.stats.failures == 1
    assert worker.stats.windows_computed == 1
    with session_factory() as session:
        bad = session.get(Window, (model_id, day_start(0)))
    assert bad is not None
    assert bad.computed_version == 0
    assert bad.attempts == 1
    assert "finite" in (bad.last_error or "")
    assert bad.lease_owner is None
    assert bad.lease_expires_at is not None
    assert bad.lease_expires_at > utcnow() + timedelta(seconds=50)
    assert [r.window_start for r in _rows(session_factory)] == [day_start(1)]
    assert worker.drain() == 0  # backing off, not retried in a hot loop


def test_a_window_that_cannot_be_computed_is_parked_until_its_data_changes(
    session_factory: sessionmaker[Session],
) -> None:
    """Three failures for a reason retrying cannot change (here a non-finite score) park the
    window, with its error in /status, instead of retrying it for ever; new data unparks it."""
    model_id = add_model(session_factory, name="parked", pi0_policy="fixed", pi0_fixed=0.03)
    rng = np.random.default_rng(4)
    scores, labels = gaussian_window(rng, 1_000, 0.03, 2.0)
    scores[7] = np.inf
    insert_rows(session_factory, model_id, day_start(0), scores, labels, prefix="bad")
    worker = _worker(session_factory, backoff_base=0.0)
    assert worker.drain() == PARK_AFTER_ATTEMPTS  # tried three times, then left alone
    assert worker.drain() == 0
    with session_factory() as session:
        queue = status(session, "parked")
    assert (queue.parked_windows, queue.failing_windows, queue.dirty_windows) == (1, 1, 1)
    (parked,) = queue.parked
    assert parked.window_start == day_start(0)
    assert parked.attempts == PARK_AFTER_ATTEMPTS
    assert "finite" in parked.error
    # The row is corrected and the window dirtied again, as a re-sent batch would.
    with session_factory.begin() as session:
        session.execute(
            update(Prediction)
            .where(Prediction.model_id == model_id, Prediction.prediction_id == "bad-7")
            .values(score=0.5)
        )
        mark_dirty(session, model_id, day_start(0))
    assert worker.drain() == 1
    with session_factory() as session:
        queue = status(session, "parked")
        window = session.get(Window, (model_id, day_start(0)))
    assert (queue.parked_windows, queue.failing_windows, queue.dirty_windows) == (0, 0, 0)
    assert window is not None
    assert window.parked_version is None


def test_only_failures_that_retrying_cannot_change_park_a_window() -> None:
    assert is_deterministic(InvalidInputError("scores must be finite"))
    assert is_deterministic(OverflowError("math range error"))
    assert not is_deterministic(OperationalError("SELECT 1", {}, Exception("disk full")))
    assert not is_deterministic(LeaseLostError("lease lost"))


def test_late_labels_redirty_and_update_only_their_window(
    session_factory: sessionmaker[Session],
) -> None:
    model_id = add_model(
        session_factory, pi0_policy="fixed", pi0_fixed=0.05, min_label_coverage=0.9
    )
    rng = np.random.default_rng(5)
    unlabelled: dict[str, int] = {}
    for index in range(3):
        scores, labels = gaussian_window(rng, 2_000, 0.05, 2.0)
        late: list[int | None] = [int(y) for y in labels]
        if index == 1:  # half of this day's labels arrive later
            for i in range(0, 2_000, 2):
                unlabelled[f"d{index}-{i}"] = int(labels[i])
                late[i] = None
        insert_rows(session_factory, model_id, day_start(index), scores, late, prefix=f"d{index}")
    worker = _worker(session_factory)
    assert worker.drain() == 3
    before = {r.window_start: r for r in _rows(session_factory)}
    assert before[day_start(1)].label_coverage == pytest.approx(0.5)
    assert before[day_start(1)].verdict == "insufficient_data"
    assert "coverage" in (before[day_start(1)].verdict_reason or "")

    set_labels(session_factory, model_id, day_start(1), unlabelled)
    versions = window_versions(session_factory, model_id)
    assert [d > c for d, c in (versions[day_start(i)] for i in range(3))] == [False, True, False]
    assert worker.drain() == 1
    after = {r.window_start: r for r in _rows(session_factory)}
    assert after[day_start(1)].label_coverage == 1.0
    assert after[day_start(1)].labelled == 2_000
    assert after[day_start(0)].computed_at == before[day_start(0)].computed_at
    assert after[day_start(2)].computed_at == before[day_start(2)].computed_at


def test_a_pi0_move_recomputes_the_series_from_sketches(
    session_factory: sessionmaker[Session],
) -> None:
    model_id = add_model(session_factory, pi0_tolerance=0.2)
    rng = np.random.default_rng(6)
    for index in range(4):
        scores, labels = gaussian_window(rng, 3_000, 0.02, 2.0)
        insert_rows(session_factory, model_id, day_start(index), scores, labels, prefix=f"d{index}")
    worker = _worker(session_factory)
    worker.drain()
    with session_factory() as session:
        first = session.scalars(select(Pi0Version).order_by(Pi0Version.version.desc())).first()
    assert first is not None
    reads, recomputed = worker.stats.rows_read, worker.stats.sketch_recomputations

    # A day with three times the fraud rate moves the historical pi0 past 20%.
    scores, labels = gaussian_window(rng, 3_000, 0.12, 2.0)
    insert_rows(session_factory, model_id, day_start(4), scores, labels, prefix="d4")
    assert worker.drain() == 1
    with session_factory() as session:
        current = session.scalars(select(Pi0Version).order_by(Pi0Version.version.desc())).first()
    assert current is not None
    assert current.version > first.version
    assert abs(current.value - first.value) > 0.2 * first.value
    # Only the new window's rows were read; the four stored windows came from their sketches.
    assert worker.stats.rows_read - reads == 3_000
    assert worker.stats.sketch_recomputations - recomputed == 4
    rows = _rows(session_factory)
    assert len(rows) == 5
    assert {(r.pi0, r.pi0_version) for r in rows} == {(current.value, current.version)}
    for row in rows:
        assert row.result is not None
        assert row.result["pi0"] == current.value
    # The stored windows' intervals were moved along their prior grids, not re-bootstrapped:
    # their grids are still centred where they were drawn, and the moved intervals stay within
    # a few hundredths of an interval width of a rerun at the new pi0 with the same seed.
    for row in rows:
        assert row.interval_grid is not None
        assert row.intervals is not None
        assert row.sketch is not None
        centre = IntervalGrid.from_bytes(row.interval_grid).pi0
        if row.window_start == day_start(4):
            assert centre == current.value
            continue
        assert centre != current.value
        rerun = bootstrap(
            CurveSketch.from_bytes(row.sketch),
            pi0=current.value,
            seed=seed_for("fraud", row.window_start, "all"),
            replicates=FAST.replicates,
        ).calibrated["average_precision"]
        moved = row.intervals["calibrated"]["average_precision"]
        assert rerun is not None
        width = rerun[1] - rerun[0]
        assert moved != list(rerun)
        assert max(abs(moved[0] - rerun[0]), abs(moved[1] - rerun[1])) < 0.03 * width


def test_two_workers_share_the_queue_without_computing_a_window_twice(
    session_factory: sessionmaker[Session],
) -> None:
    model_id = add_model(session_factory, pi0_policy="fixed", pi0_fixed=0.03)
    rng = np.random.default_rng(7)
    for index in range(12):
        scores, labels = gaussian_window(rng, 1_500, 0.03, 2.0)
        insert_rows(session_factory, model_id, day_start(index), scores, labels, prefix=f"d{index}")
    workers = [_worker(session_factory) for _ in range(2)]
    threads = [threading.Thread(target=w.drain) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sum(w.stats.windows_computed for w in workers) == 12
    assert sum(w.stats.failures for w in workers) == 0
    assert all(d == c == 1 for d, c in window_versions(session_factory, model_id).values())
    assert len(_rows(session_factory)) == 12
