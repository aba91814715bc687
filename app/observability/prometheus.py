"""Wire Prometheus into the app: one registry per app, the /metrics route, latency middleware."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

from app.errors import AuthenticationError
from app.observability.collector import CalmonCollector
from app.observability.exposition import render
from app.observability.service_metrics import RequestLatencyMiddleware, ServiceMetrics
from app.settings import Settings

router = APIRouter(tags=["observability"])

PAGE_TTL_SECONDS = 5.0
"""How long one rendering serves scrapes (the collector's database read is cached as long)."""


class ScrapePage:
    """The rendered /metrics text, made once per TTL however many scrapers ask at once.

    Reading and rendering a large registry costs seconds of CPU; four scrapers arriving
    together must not cost four renderings (nor four times the memory). The first renders
    under the lock; the others wait for it and get the same bytes. The service's own counters
    in the page are therefore up to a TTL old.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        ttl_seconds: float = PAGE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._registry = registry
        self._ttl_seconds = ttl_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._page: tuple[float, bytes] | None = None
        self.renderings = 0

    def text(self) -> bytes:
        """The page, rendered again if older than the TTL."""
        with self._lock:
            if self._page is not None and self._clock() - self._page[0] < self._ttl_seconds:
                return self._page[1]
            page = render(self._registry.collect())
            self.renderings += 1
            self._page = (self._clock(), page)
            return page


def _check_scrape_token(request: Request, settings: Settings) -> None:
    if settings.metrics_token is None:
        return
    expected = f"Bearer {settings.metrics_token.get_secret_value()}"
    sent = request.headers.get("authorization", "")
    # Constant time: the comparison must not tell a prober how much of the token was right.
    if not secrets.compare_digest(sent.encode(), expected.encode()):
        raise AuthenticationError(
            "/metrics needs the scrape token (CALMON_METRICS_TOKEN) as "
            "'Authorization: Bearer <token>'",
            invalid_token=bool(sent),
        )


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format: domain gauges from the database, and this process's counters.

    Open like /healthz unless CALMON_METRICS_TOKEN is set (then it needs that token); it
    carries model names and metric values, no predictions. Rendered at most once per 5 s, and
    kept within CALMON_METRICS_MAX_SERIES series.
    """
    _check_scrape_token(request, request.app.state.settings)
    page: ScrapePage = request.app.state.metrics_page
    return Response(page.text(), media_type=CONTENT_TYPE_LATEST)


def install_metrics(app: FastAPI, settings: Settings) -> None:
    """Give ``app`` its metrics registry, ``GET /metrics`` and request-latency observation.

    A registry per app (not prometheus_client's global one) keeps several apps in one process,
    as tests create them, from colliding on metric names.
    """
    registry = CollectorRegistry()
    service = ServiceMetrics(registry)
    registry.register(
        CalmonCollector(
            lambda: app.state.session_factory,
            lease_seconds=settings.worker_lease_seconds,
            max_series=settings.metrics_max_series,
        )
    )
    app.state.metrics_registry = registry
    app.state.metrics_page = ScrapePage(registry)
    app.state.service_metrics = service
    app.add_middleware(RequestLatencyMiddleware, histogram=service.request_duration)
    app.include_router(router)
