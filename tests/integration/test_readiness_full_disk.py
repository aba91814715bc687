"""A full tablespace: the batch fails with PostgreSQL's disk-full error, /readyz stays red
until a write succeeds once the volume has grown (issue 25).

Real PostgreSQL writing into a real 1 MiB filesystem (a tmpfs this test mounts, and grows the
way an operator grows a volume). The probe's own write lands elsewhere (alembic_version, in the
default tablespace) and succeeds all along: only the latch of the server's writes
(app.api.write_health) knows. Needs root (to mount), the PostgreSQL server on this machine (to
put a tablespace in the mount) and a superuser role (to create one): skipped otherwise, CI
included, since a CI runner may rightly offer none of the three.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from app.api.app import create_app
from app.services.tokens import create_token
from tests.support.databases import Backend, settings_for, with_server_setting

pytestmark = pytest.mark.postgres

ROWS = 30_000  # a few MiB of rows, keys and indexes: more than the 1 MiB volume holds


def _mount(directory: Path, size: str, *, remount: bool = False) -> None:
    options = f"remount,size={size}" if remount else f"size={size},mode=0700"
    command = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)]
    subprocess.run(command, check=True, capture_output=True)


@contextmanager
def _small_tablespace(engine: Engine) -> Iterator[tuple[str, Path]]:
    """A tablespace on a 1 MiB tmpfs (its name, its mount point); its tables dropped, the
    tablespace dropped and the filesystem unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    with engine.connect() as connection:
        if connection.execute(text("SHOW is_superuser")).scalar_one() != "on":
            pytest.skip("creating a tablespace needs a superuser role")
        data_directory = connection.execute(text("SHOW data_directory")).scalar_one()
    if not Path(data_directory).is_dir():
        pytest.skip("the PostgreSQL server is not on this machine")
    directory = Path(tempfile.mkdtemp(prefix="calmon-full-disk-"))
    try:
        _mount(directory, "1m")
    except (OSError, subprocess.CalledProcessError) as exc:
        directory.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {exc}")
    name = f"calmon_full_{secrets.token_hex(3)}"
    autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
    try:
        server = Path(data_directory).stat()
        os.chown(directory, server.st_uid, server.st_gid)  # the server's own OS user
        with autocommit.connect() as connection:
            connection.execute(text(f"CREATE TABLESPACE {name} LOCATION '{directory}'"))
        yield name, directory
    finally:
        with autocommit.connect() as connection:
            tables = (
                connection.execute(
                    text(
                        "SELECT c.oid::regclass::text FROM pg_class c "
                        "JOIN pg_tablespace t ON t.oid = c.reltablespace "
                        "WHERE t.spcname = :name AND c.relkind IN ('r', 'p')"
                    ),
                    {"name": name},
                )
                .scalars()
                .all()
            )
            for table in tables:
                connection.execute(text(f"DROP TABLE IF EXISTS {table} CASCADE"))
            connection.execute(text(f"DROP TABLESPACE IF EXISTS {name}"))
        subprocess.run(["umount", str(directory)], check=True)
        directory.rmdir()


def _batch() -> dict[str, object]:
    # A week no other test writes to: its partition must not exist yet (a model id is reused
    # once the database is emptied, and an earlier test's week table would take the rows in
    # the default tablespace), so the batch creates it on the small volume.
    start = datetime(2017, 2, 6, tzinfo=UTC)
    return {
        "batch_id": "big",
        "columns": {
            "id": [f"tx-{i:08d}" for i in range(ROWS)],
            "timestamp": [(start + timedelta(seconds=i)).isoformat() for i in range(ROWS)],
            "score": [0.5] * ROWS,
        },
    }


def test_a_full_tablespace_keeps_readyz_red_until_a_write_succeeds(
    backend: Backend, database_url: str, session_factory: sessionmaker[Session], engine: Engine
) -> None:
    if backend != "postgresql":
        pytest.skip("tablespaces are PostgreSQL's")
    with session_factory.begin() as session:
        token = create_token(session, "disk", ["admin", "ingest"]).token
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(settings_for(database_url))) as client:
        model = {"name": "fraud-v1", "threshold": 0.5}
        assert client.post("/v1/models", json=model, headers=headers).status_code == 201
    with _small_tablespace(engine) as (tablespace, directory):
        # The week's tables the batch creates go to the small volume.
        url = with_server_setting(database_url, "default_tablespace", tablespace)
        with TestClient(create_app(settings_for(url))) as client:
            failed = client.post("/v1/models/fraud-v1/batches", json=_batch(), headers=headers)
            red = client.get("/readyz")
            _mount(directory, "64m", remount=True)  # the operator grows the volume
            stored = client.post("/v1/models/fraud-v1/batches", json=_batch(), headers=headers)
            green = client.get("/readyz")
    assert failed.status_code == 503, failed.text
    assert "out of disk space" in failed.json()["error"]["message"]
    assert red.status_code == 503, red.text
    assert red.json()["error"]["message"].startswith("a write failed"), red.text
    assert stored.status_code == 201, stored.text
    assert green.status_code == 200, green.text
