"""What a first hour with the `calmon` command hits: version, the database it opens, secrets."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from app.db.engine import redacted_url
from tests.support.server import REPO_ROOT, clean_environment, free_port, run_calmon

_calmon = run_calmon


def test_version(tmp_path: Path) -> None:
    done = _calmon("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == f"calmon {version('calmon')}"


def test_token_create_in_another_directory_creates_no_database(tmp_path: Path) -> None:
    done = _calmon("token", "create", "--name", "ops", "--scopes", "admin", cwd=tmp_path)
    assert done.returncode == 1
    assert f"no calmon database at {tmp_path.resolve()}/var/calmon.sqlite3" in done.stderr
    assert "CALMON_DATA_DIR" in done.stderr
    assert not (tmp_path / "var").exists()
    assert done.stdout == ""  # no token printed that no server would accept


def test_a_password_with_an_unencoded_at_sign_is_never_shown(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://calmon:s3cr@t-pa@ss@127.0.0.1:{free_port()}/calmon"
    assert redacted_url(url) == f"postgresql+psycopg://calmon:***@127.0.0.1:{url.rsplit(':', 1)[1]}"
    # The real command's error path: the database is unreachable and the message names it.
    done = _calmon("migrate", cwd=tmp_path, env={"CALMON_DATABASE_URL": url})
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "password contains an unencoded '@': percent-encode it as %40" in output
    assert "calmon:***@127.0.0.1" in output
    assert "s3cr" not in output
    assert "pa@ss" not in output
    assert "t-pa" not in output


def test_an_unreachable_database_is_one_line_naming_it(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql+psycopg://calmon:secret@127.0.0.1:{port}/calmon"
    done = _calmon("token", "list", cwd=tmp_path, env={"CALMON_DATABASE_URL": url})
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(  # after the log lines, what to act on
        f"calmon: cannot use the database postgresql+psycopg://calmon:***@127.0.0.1:{port}/calmon: "
    )
    assert "Traceback" not in done.stderr
    assert "secret" not in done.stderr


def test_the_http_commands_start_without_the_database_stack() -> None:
    """`calmon send` and `calmon demo` talk HTTP only: the CLI imports SQLAlchemy and Alembic in
    the commands that use a database, not at start (about a third of a second each start)."""
    probe = "import sys, app.cli; print(sorted({m.split('.')[0] for m in sys.modules}))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=clean_environment({"PYTHONPATH": str(REPO_ROOT)}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = done.stdout
    assert "'httpx'" in loaded  # the probe sees what the CLI imported
    assert "'sqlalchemy'" not in loaded
    assert "'alembic'" not in loaded
