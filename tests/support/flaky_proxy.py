"""A real TCP proxy in front of a live server that fails the first request on purpose.

    with FlakyProxy(server.port, fault="lose_response") as proxy:
        CalmonClient(proxy.base_url, token).send(...)

``lose_response``: the first request reaches the server, which handles it, but the proxy closes
the client's connection instead of returning the answer (a network cut after the commit).
``unavailable``: the first request is answered 503 without reaching the server. Every later
connection is passed through unchanged. One request per connection (``Connection: close``), so
the proxy can tell requests apart without parsing HTTP pipelining.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from typing import Literal

Fault = Literal["lose_response", "unavailable"]


class FlakyProxy:
    """Listen on a free loopback port; forward to ``upstream_port``."""

    def __init__(self, upstream_port: int, fault: Fault) -> None:
        self.upstream_port = upstream_port
        self.fault = fault
        self.requests = 0
        self.faults = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        """Where the client should connect."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FlakyProxy:
        self._thread.start()
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        with client:
            request = _read_message(client)
            if not request:
                return
            self.requests += 1
            first = self.requests == 1
            if first and self.fault == "unavailable":
                self.faults += 1
                client.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n"
                    b"connection: close\r\n\r\n"
                )
                return
            with socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
                upstream.sendall(_with_connection_close(request))
                response = _read_all(upstream)
            if first and self.fault == "lose_response":
                self.faults += 1
                return  # the server has answered; the client never hears it
            client.sendall(response)


def _read_message(sock: socket.socket) -> bytes:
    """One HTTP request: headers, then content-length bytes of body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _with_connection_close(request: bytes) -> bytes:
    head, _, body = request.partition(b"\r\n\r\n")
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n" + body


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data
