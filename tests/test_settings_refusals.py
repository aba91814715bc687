"""Unusable settings stop every command before it starts, in one clear line (issue 16,
finding 6): no traceback, and no silent fallback to a local SQLite file in production."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.settings import Settings
from tests.support.server import REPO_ROOT, clean_environment


@pytest.fixture(autouse=True)
def _no_calmon_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [n for n in os.environ if n.startswith("CALMON_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_production_with_an_empty_database_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # What `CALMON_DATABASE_URL: ${DATABASE_URL}` in a compose file gives when it is unset.
    monkeypatch.setenv("CALMON_ENVIRONMENT", "production")
    monkeypatch.setenv("CALMON_DATABASE_URL", "")
    with pytest.raises(ValidationError, match="CALMON_DATABASE_URL"):
        Settings()


def test_production_with_an_explicit_url_starts() -> None:
    settings = Settings(environment="production", database_url="postgresql+psycopg://u@db/c")
    assert not settings.is_sqlite


@pytest.mark.parametrize("command", ["serve", "worker", "migrate"])
@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"CALMON_ENVIRONMENT": "production", "CALMON_DATABASE_URL": ""}, "CALMON_DATABASE_URL"),
        (
            {
                "CALMON_ENVIRONMENT": "production",
                "CALMON_DATABASE_URL": "postgresql+psycopg://u@db/c",
                "CALMON_AUTH_DISABLED": "true",
            },
            "CALMON_AUTH_DISABLED",
        ),
        ({"CALMON_PORT": "eighty"}, "CALMON_PORT"),
        ({"CALMON_CONFIG_FILE": "/nonexistent/calmon.toml"}, "CALMON_CONFIG_FILE"),
        (
            {"CALMON_ENVIRONMENT": "production", "CALMON_DATABASE_URL": "sqlite:///x.sqlite3"},
            "CALMON_DATABASE_URL",
        ),
    ],
    ids=["empty_url", "auth_disabled", "bad_port", "missing_file", "sqlite_url"],
)
def test_a_refusal_is_one_line(
    command: str, env: dict[str, str], named: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", command],
        cwd=REPO_ROOT,
        env=clean_environment({"CALMON_DATA_DIR": str(tmp_path), **env}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("calmon: invalid configuration: ")
    assert named in lines[0]
    assert not list(tmp_path.glob("*.sqlite3"))  # nothing was started
