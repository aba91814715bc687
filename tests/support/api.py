"""The in-process API as tests call it: the ``auth_headers`` fixture's type and a checked GET."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

AuthHeaders = Callable[..., dict[str, str]]
"""The ``auth_headers`` fixture: ``auth_headers("ingest", "read")`` -> headers, fresh token."""


def get_json(client: TestClient, headers: dict[str, str], path: str, **params: Any) -> Any:
    """GET ``path`` (query ``params``), assert a 200 and return the decoded body."""
    # httpx drops a query written in ``path`` when given params, even empty ones.
    response = client.get(path, headers=headers, params=params or None)
    assert response.status_code == 200, response.text
    return response.json()
