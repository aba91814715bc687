"""Settings: sources and their priority, production refusals, and documentation completeness."""

from __future__ import annotations

import os
import re
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.settings import CONFIG_FILE_ENV, Settings, SettingsError, config_file_path

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "config" / "calmon.example.toml"


@pytest.fixture(autouse=True)
def _no_calmon_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test starts from defaults: no CALMON_* variables, no config/calmon.toml in cwd."""
    for name in [n for n in os.environ if n.startswith("CALMON_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_defaults_are_the_embedded_sqlite_database() -> None:
    settings = Settings()
    assert settings.database_url == "sqlite:///var/calmon.sqlite3"
    assert settings.is_sqlite
    assert settings.should_migrate_on_start
    assert not settings.auth_disabled
    assert settings.min_timestamp == datetime(2000, 1, 1, tzinfo=UTC)
    assert settings.max_future == timedelta(days=1)


def test_data_dir_moves_the_default_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALMON_DATA_DIR", "/srv/calmon")
    assert Settings().database_url == "sqlite:////srv/calmon/calmon.sqlite3"


def test_postgresql_does_not_migrate_on_start_unless_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CALMON_DATABASE_URL", "postgresql+psycopg://u@db/calmon")
    assert not Settings().should_migrate_on_start
    monkeypatch.setenv("CALMON_MIGRATE_ON_START", "true")
    assert Settings().should_migrate_on_start


def test_toml_file_is_read_and_environment_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "calmon.toml").write_text(
        'port = 9100\nmax_future = "PT2H"\nlog_level = "debug"\n'
    )
    monkeypatch.setenv("CALMON_PORT", "9200")
    settings = Settings()
    assert settings.port == 9200
    assert settings.max_future == timedelta(hours=2)
    assert settings.log_level == "debug"


def test_explicit_config_file_must_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_FILE_ENV, "/nonexistent/calmon.toml")
    with pytest.raises(SettingsError, match="does not name a readable file"):
        config_file_path()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"auth_disabled": True, "database_url": "postgresql+psycopg://u@db/c"}, "auth_disabled"),
        ({}, "explicit CALMON_DATABASE_URL"),
        ({"database_url": "sqlite:///var/calmon.sqlite3"}, "production needs PostgreSQL"),
    ],
)
def test_production_refuses_unsafe_defaults(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(environment="production", **values)  # type: ignore[arg-type]
    Settings(environment="production", database_url="postgresql+psycopg://u@db/c")


def test_example_file_parses_and_names_every_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    text = EXAMPLE.read_text()
    uncommented = "\n".join(
        re.sub(r"^# ", "", line) for line in text.splitlines() if re.match(r"^# [a-z_]+ = ", line)
    )
    keys = set(tomllib.loads(uncommented))
    assert keys == set(Settings.model_fields)
    monkeypatch.setenv(CONFIG_FILE_ENV, str(EXAMPLE))
    Settings()  # the file as shipped (all commented) is valid


def test_configuration_page_lists_every_setting() -> None:
    page = (REPO_ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `CALMON_([A-Z0-9_]+)` \|", page, flags=re.MULTILINE))
    assert documented == {name.upper() for name in Settings.model_fields}
