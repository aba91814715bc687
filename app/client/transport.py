"""Small facts about the HTTP exchange: is the service local, what did it answer."""

from __future__ import annotations

import ipaddress
from typing import Any

import httpx


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (its requests are not worth compressing)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def response_body(response: httpx.Response) -> Any:
    """The answer's JSON, or its text when it is not JSON (a proxy's error page)."""
    try:
        return response.json()
    except ValueError:
        return response.text
