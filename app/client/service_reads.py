"""The client's calls for the service's state and the analyses: health and readiness, the
what-if and the champion-challenger comparison (``CalmonClient`` inherits them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx


class ServiceReads:
    """Reads that need nothing but a path and a query; ``CalmonClient`` supplies the transport
    (``_json`` with its retries, ``_http`` for a probe answered once)."""

    _http: httpx.Client

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError  # CalmonClient's

    def health(self) -> dict[str, Any]:
        """``/healthz``: the process serves HTTP (retried like every call while it does not)."""
        return self._json("GET", "/healthz")

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """``/readyz`` asked once: whether the service takes writes now, and its answer (the
        reason when not). Not retried: a 503 here is the state to report, not a failure."""
        response = self._http.get("/readyz")
        try:
            body: dict[str, Any] = response.json()
        except ValueError:
            body = {"status": response.text}
        return response.status_code == 200, body

    def what_if(self, model: str, request: dict[str, Any]) -> dict[str, Any]:
        """``POST .../whatif``: the period's metrics at other fraud rates (the request is
        ``WhatIfRequest``'s JSON: priors, range, trajectory, period)."""
        return self._json("POST", f"/v1/models/{model}/whatif", json=request)

    def compare(
        self,
        champion: str,
        challenger: str,
        *,
        metric: str = "average_precision",
        period: Period | None = None,
        replicates: int = 1000,
    ) -> dict[str, Any]:
        """``GET .../compare``: the champion against a challenger over the same period."""
        period = period or Period()
        params: dict[str, Any] = {
            "challenger": challenger,
            "metric": metric,
            "segment": period.segment,
            "replicates": replicates,
            **period_params(period.start, period.end),
        }
        return self._json("GET", f"/v1/models/{champion}/compare", params=params)


@dataclass(frozen=True)
class Period:
    """A segment's windows from ``start`` (inclusive) to ``end`` (exclusive): window starts;
    None is the first or the newest."""

    segment: str = "all"
    start: datetime | str | None = None
    end: datetime | str | None = None


def period_params(start: datetime | str | None, end: datetime | str | None) -> dict[str, str]:
    """The ``from``/``to`` query parameters of a period (window starts; ``to`` exclusive)."""
    params = {}
    for key, value in (("from", start), ("to", end)):
        if value is not None:
            params[key] = value.isoformat() if isinstance(value, datetime) else value
    return params
