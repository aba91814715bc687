"""The API process's own metrics: ingest counters and request latency.

These live in the process (each replica counts what it served; Prometheus sums them), unlike
the domain gauges, which the collector reads from the database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import CalmonError

# Statuses that mean "the client sent rows calmon will not monitor". A 404 (unknown model) is
# not counted: its model label would come from an arbitrary URL, an unbounded label set.
_REJECTION_STATUSES = frozenset({409, 413, 422})
# Latency buckets for an API whose requests range from a health probe to a 100k-row batch.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
UNMATCHED_ROUTE = "unmatched"


class ServiceMetrics:
    """Counters and the latency histogram, registered on one registry (one per app)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.ingested_rows = Counter(
            "calmon_ingested_rows",
            "Prediction rows accepted by POST /v1/models/{name}/batches (replays included).",
            ["model"],
            registry=registry,
        )
        self.rejected_rows = Counter(
            "calmon_rejected_rows",
            "Prediction rows in batches refused as invalid, conflicting or too large.",
            ["model"],
            registry=registry,
        )
        self.rejected_batches = Counter(
            "calmon_rejected_batches",
            "Batches refused as invalid, conflicting or too large (nothing of them is stored).",
            ["model"],
            registry=registry,
        )
        self.request_duration = Histogram(
            "calmon_http_request_duration_seconds",
            "HTTP request latency by method, templated route and status.",
            ["method", "route", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )

    @contextmanager
    def counting_batch(self, model: str, rows: int) -> Iterator[None]:
        """Count a batch as ingested if the block returns, as rejected if it refuses the rows.

        A batch is stored entirely or not at all, so its rows are counted on one side only.
        """
        try:
            yield
        except CalmonError as error:
            if error.status_code in _REJECTION_STATUSES:
                self.rejected_rows.labels(model).inc(rows)
                self.rejected_batches.labels(model).inc()
            raise
        self.ingested_rows.labels(model).inc(rows)


def service_metrics(request: Request) -> ServiceMetrics:
    """The ServiceMetrics of the app serving ``request``."""
    metrics: ServiceMetrics = request.app.state.service_metrics
    return metrics


class RequestLatencyMiddleware:
    """Observe every HTTP request's duration under its templated route (``/v1/models/{name}``).

    A pure ASGI middleware: it sees the status from ``http.response.start`` and the matched
    route that the router stores in the (shared) scope, without buffering the body.
    """

    def __init__(self, app: ASGIApp, histogram: Histogram) -> None:
        self.app = app
        self.histogram = histogram

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before responding

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_with_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED_ROUTE
            self.histogram.labels(scope["method"], route, str(status)).observe(
                time.perf_counter() - started
            )
