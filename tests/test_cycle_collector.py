"""app.cycle_collector: the collector is off while any step holds it, and back on after the
last one, however steps interleave or fail."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from app.cycle_collector import collector_paused
from app.ingest.errors import BatchValidationError
from app.ingest.parse import parse_csv


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_interleaved_steps_leave_the_collector_on_after_the_last() -> None:
    first = collector_paused()
    second = collector_paused()
    first.__enter__()
    second.__enter__()  # sees it off already: a plain restore would leave it off for good
    first.__exit__(None, None, None)
    assert not gc.isenabled()  # the second step still runs
    second.__exit__(None, None, None)
    assert gc.isenabled()


def _failing_step() -> None:
    with collector_paused():
        assert not gc.isenabled()
        raise ValueError("the step failed")


def test_a_failing_step_turns_it_back_on() -> None:
    with pytest.raises(ValueError, match="the step failed"):
        _failing_step()
    assert gc.isenabled()


def test_a_collector_switched_off_elsewhere_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_steps_in_many_threads_leave_it_on() -> None:
    barrier = threading.Barrier(8)
    seen_on: list[bool] = []

    def step() -> None:
        with collector_paused():
            barrier.wait(timeout=10)
            seen_on.append(gc.isenabled())

    threads = [threading.Thread(target=step) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen_on == [False] * 8
    assert gc.isenabled()


def test_a_csv_parse_runs_without_collections_and_leaves_it_on() -> None:
    lines = "".join(f"row-{k},2026-01-01T00:00:00Z,0.5,0,FR\n" for k in range(20_000))
    body = ("id,timestamp,score,label,segment\n" + lines).encode()
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        parse_csv(body, "batch")  # 20,000 record lists: dozens of collections if not held off
    finally:
        gc.callbacks.remove(count)
    assert collections == []
    assert gc.isenabled()


def test_a_refused_csv_leaves_it_on() -> None:
    with pytest.raises(BatchValidationError, match="batch refused"):
        parse_csv(b"\xff\xfe not utf-8", "batch")
    assert gc.isenabled()
