"""Smoke run of bench/worker_phases.py on PostgreSQL with a small window (20,000 rows, so that
every segment holds frauds, as its frozen references must): the bench keeps working, its
phases lie inside the claim, each is printed as a multiple of the floor timed beside it, and it
takes its timers off again."""

from __future__ import annotations

import re

import pytest

from app.windows import compute
from bench import worker_phases
from tests.support.databases import Backend

pytestmark = pytest.mark.slow


def test_the_phases_of_a_claim_with_and_without_the_fields(
    backend: Backend, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend != "postgresql":
        pytest.skip("the phases bench measures PostgreSQL")
    before = {name: getattr(compute, name) for name in worker_phases.PHASES}
    argv = ["--database-url", database_url, "--rows", "20000", "--repeats", "2"]
    assert worker_phases.main([*argv, "--replicates", "100"]) == 0
    assert {name: getattr(compute, name) for name in worker_phases.PHASES} == before
    out = capsys.readouterr().out
    medians = {
        line.split()[0]: [float(x) for x in line.split()[1:4]]
        for line in out.splitlines()[2:]
        if line.split()[0] in {"claim", "evaluate_segment", "run_nowcasts", "rest"}
    }
    claim, bootstraps = medians["claim"], medians["evaluate_segment"]
    # Every window is evaluated and nowcast, with the fields and without; the timed phases
    # are inside the claim.
    assert all(value > 0 for value in bootstraps[:2] + medians["run_nowcasts"][:2]), out
    assert bootstraps[0] < claim[0], out
    assert bootstraps[1] < claim[1], out
    assert re.search(r"read on the server \(EXPLAIN ANALYZE\): [0-9.]+ -> [0-9.]+ ms", out), out
    # The floor was timed beside the claims, and each phase is printed as its multiple.
    found = re.search(r"the floor, one read and one evaluate: ([0-9.]+) ms", out)
    assert found is not None, out
    floor = float(found.group(1))
    claim_line = next(line for line in out.splitlines()[2:] if line.split()[0] == "claim")
    multiple = float(claim_line.split()[4].rstrip("x"))
    assert 0 < floor < claim[0], out
    assert abs(multiple - claim[0] / floor) < 0.02 * multiple + 0.01, out
    # The 100-segment workload's floor: an evaluate a segment and one for the whole window.
    once = ["--database-url", database_url, "--rows", "20000", "--repeats", "1"]
    assert worker_phases.main([*once, "--replicates", "10", "--evaluate-per-segment"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"the floor, one read and an evaluate a segment and one: [0-9.]+ ms", out), out
