"""`calmon serve` as a real process: the one-command start on the embedded default."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from tests.support.server import running_server


def test_first_start_migrates_the_embedded_database_and_sigterm_stops_cleanly(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/data/calmon.sqlite3"  # neither the file nor its directory exist
    with running_server(url, log_dir=tmp_path) as server:
        ready = httpx.get(f"{server.base_url}/readyz")
        assert ready.status_code == 200
        process, log_path = server.process, server.log_path
    # uvicorn shuts down gracefully, then re-raises the captured SIGTERM so that the exit status
    # tells a supervisor why it stopped; the log proves the shutdown was complete.
    assert process.returncode == -signal.SIGTERM

    lines = log_path.read_text().splitlines()
    events = [json.loads(line) for line in lines]  # every line is one JSON object
    names = [event["event"] for event in events]
    assert names.index("migrated") < names.index("serving")
    assert "Application shutdown complete." in names
    assert all({"ts", "level", "logger", "event"} <= event.keys() for event in events)
