"""A small run of bench/load_growth.py on a scratch cluster started with docker-compose.yml's
PostgreSQL settings: the production path's server settings are accepted by a real PostgreSQL
(a typo or a setting this version lacks fails here, not on a user's first `docker compose up`),
and the bench that measures them keeps working. The figures come from the full run."""

from __future__ import annotations

import glob
import re

import pytest

from bench.cluster import compose_settings
from bench.load_growth import main


def test_compose_settings_are_read_from_the_compose_file() -> None:
    settings = compose_settings()
    assert settings["shared_buffers"].endswith("GB")
    assert settings["wal_compression"] == "lz4"


@pytest.mark.slow
@pytest.mark.postgres
def test_load_growth_runs_on_a_cluster_with_the_compose_settings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        pytest.skip("PostgreSQL's server binaries are not installed")
    arguments = ["--scratch-cluster", "compose", "--rows", "100000", "--batch-rows", "25000"]
    main([*arguments, "--ids", "random", "--checkpoint-every-rows", "50000"])
    out = capsys.readouterr().out
    assert "'wal_compression': 'lz4'" in out
    assert re.search(r"\| 0M-1M \| 4 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|", out), out
    assert re.search(r"1 checkpoints\)", out), out
    assert re.search(r"stored: keys heap [0-9,]+ MB, keys indexes [0-9,]+ MB", out), out


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("writer", ["best", "one-table"])
def test_the_floors_load_too(writer: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The floors whose growth calmon's is read against (docs/scaling.md) keep running."""
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        pytest.skip("PostgreSQL's server binaries are not installed")
    arguments = ["--scratch-cluster", "defaults", "--rows", "100000", "--batch-rows", "25000"]
    main([*arguments, "--writer", writer])
    out = capsys.readouterr().out
    assert f"random ids, {writer} writer" in out
    assert re.search(r"\| 0M-1M \| 4 \| [0-9.]+ \|", out), out
    stored = re.search(r"rows heap ([0-9,]+) MB", out)
    assert stored, out
    assert int(stored.group(1).replace(",", "")) > 0, out
