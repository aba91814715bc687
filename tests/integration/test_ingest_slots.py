"""CALMON_MAX_CONCURRENT_INGEST bounds how many ingest bodies a process reads, decodes and
parses at once (issue 16, finding 2: each may cost a few times CALMON_MAX_BODY_BYTES, and the
thread pool alone allows 40): a request beyond the bound waits for a slot, and is answered 503
with Retry-After if none frees up in time. Real uvicorn, a body held half-sent on a socket."""

from __future__ import annotations

import concurrent.futures
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from tests.support.server import LiveServer, running_server

MODEL = "fraud-v1"
WAIT_SECONDS = 2


@pytest.fixture
def one_slot_server(tmp_path: Path) -> Iterator[LiveServer]:
    env = {
        "CALMON_AUTH_DISABLED": "true",
        "CALMON_MAX_CONCURRENT_INGEST": "1",
        "CALMON_DB_POOL_TIMEOUT_SECONDS": str(WAIT_SECONDS),
    }
    url = f"sqlite:///{tmp_path}/calmon.sqlite3"
    with running_server(url, env=env, log_dir=tmp_path) as server:
        created = httpx.post(f"{server.base_url}/v1/models", json={"name": MODEL, "threshold": 0.5})
        assert created.status_code == 201, created.text
        yield server


def _batch(batch_id: str) -> bytes:
    row = {"id": f"{batch_id}-1", "timestamp": "2026-11-02T10:00:00Z", "score": 0.9}
    return msgspec.json.encode({"batch_id": batch_id, "rows": [row]})


class HalfSentBatch:
    """A batch whose headers and first half are sent, the rest only on ``finish``: until then
    the server is reading its body, holding an ingest slot."""

    def __init__(self, server: LiveServer) -> None:
        self.body = _batch("held")
        self.sock = socket.create_connection(("127.0.0.1", server.port))
        head = (
            f"POST /v1/models/{MODEL}/batches HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(self.body)}\r\n\r\n"
        ).encode()
        self.sock.sendall(head + self.body[:10])
        # The server takes the slot as soon as the headers arrive; nothing outside it shows
        # when that happened, so give it a moment before anything else is sent.
        time.sleep(0.3)

    def finish(self) -> int:
        """Send the rest; the response's status."""
        self.sock.sendall(self.body[10:])
        self.sock.settimeout(30)
        status_line = self.sock.recv(4096).split(b"\r\n", 1)[0]
        self.sock.close()
        return int(status_line.split()[1])


def _post(server: LiveServer, batch_id: str) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/v1/models/{MODEL}/batches",
        content=_batch(batch_id),
        headers={"Content-Type": "application/json"},
        timeout=30,
    )


def test_an_ingest_request_beyond_the_slots_waits_then_gets_503_with_retry_after(
    one_slot_server: LiveServer,
) -> None:
    held = HalfSentBatch(one_slot_server)
    refused = _post(one_slot_server, "refused")
    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"] == "2"
    assert "CALMON_MAX_CONCURRENT_INGEST" in refused.json()["error"]["message"]
    # Reads are not ingest: they do not wait for a slot.
    assert httpx.get(f"{one_slot_server.base_url}/v1/models").status_code == 200
    assert held.finish() == 201


def test_a_waiting_ingest_request_gets_the_slot_once_it_frees_up(
    one_slot_server: LiveServer,
) -> None:
    held = HalfSentBatch(one_slot_server)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(_post, one_slot_server, "queued")
        with pytest.raises(concurrent.futures.TimeoutError):
            waiting.result(timeout=0.5)  # still queued behind the held body
        assert held.finish() == 201
        assert waiting.result().status_code == 201
