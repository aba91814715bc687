"""bench/metrics_ab.py: an older commit's metrics package beside this one's, paired."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bench import metrics_ab
from tests.support.server import REPO_ROOT


@pytest.fixture
def old_head(tmp_path: Path) -> Iterator[Path]:
    """HEAD's app/ as calmon_old, importable for the test; its modules forgotten afterwards."""
    metrics_ab.old_package("HEAD", tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path / metrics_ab.OLD
    finally:
        sys.path.remove(str(tmp_path))
        metrics_ab.forget_old_package()


def test_the_old_package_imports_only_itself(old_head: Path) -> None:
    sources = [path.read_text() for path in old_head.rglob("*.py")]
    assert len(sources) > 50
    assert not any(metrics_ab._IMPORT.search(source) for source in sources)
    window = metrics_ab.Window(metrics_ab.OLD, 1500, 2)
    assert type(window.parts[True][0][0]).__module__.startswith(f"{metrics_ab.OLD}.metrics")


def test_the_same_commit_computes_the_same_intervals(old_head: Path) -> None:
    """Against HEAD, the copy is the same code: the same bootstraps, float for float (skipped
    while app/ has changes of its own that HEAD lacks)."""
    diff = ["git", "diff", "--quiet", "HEAD", "--", "app"]
    changed = subprocess.run(diff, cwd=REPO_ROOT, check=False)
    if changed.returncode != 0:
        pytest.skip("app/ differs from HEAD")
    old, new = (metrics_ab.Window(package, 1500, 2) for package in (metrics_ab.OLD, "app"))
    for (old_sketch, old_budget), (sketch, budget) in zip(
        old.parts[True], new.parts[True], strict=True
    ):
        a = old.metrics.bootstrap(old_sketch, pi0=0.005, seed=1, grid=old.grid, budget=old_budget)
        b = new.metrics.bootstrap(sketch, pi0=0.005, seed=1, grid=new.grid, budget=budget)
        assert dict(a.regular) == dict(b.regular)
        assert np.array_equal(a.grid.bounds, b.grid.bounds, equal_nan=True)
    for fields in (False, True):  # the sketches job's parts, as the worker builds them
        old_parts, parts = (w.rows.numbered_parts(w.segment_rows[fields]) for w in (old, new))
        for old_part, part in zip(old_parts, parts, strict=True):
            assert np.array_equal(old_part.entities, part.entities)
            old_sketch, sketch = (
                w.metrics.build_sketch(
                    p.scores, p.labels, threshold=2.0, amounts=p.amounts, entities=p.entities
                )
                for w, p in ((old, old_part), (new, part))
            )
            assert old_sketch.to_bytes() == sketch.to_bytes()
    for (positives, negatives), seed in zip(new.classes, range(3), strict=True):
        drawn = [
            w.metrics.NullModel.of(w.reference_sketch, pi0=0.005).draw(
                positives, negatives, replicates=100, seed=seed
            )
            for w in (old, new)
        ]
        assert np.array_equal(*drawn)


def test_a_small_run_prints_each_jobs_pair(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--old", "HEAD", "--rows", "1500", "--segments", "2", "--iterations", "2"]
    assert metrics_ab.main(argv) == 0
    assert not any(name.split(".")[0] == metrics_ab.OLD for name in sys.modules)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("1,500 rows, 3 parts, old = HEAD, 2 pairs")
    jobs = len(metrics_ab.JOBS)
    assert [line.split("old")[0].strip() for line in lines[1 : jobs + 1]] == list(metrics_ab.JOBS)
    assert all("new / old" in line for line in lines[1 : jobs + 1])
    for line, what in zip(lines[jobs + 1 :], ("bootstraps", "sketches"), strict=True):
        assert line.startswith(f"  what amounts and cards cost the {what}, as a ratio: old")
