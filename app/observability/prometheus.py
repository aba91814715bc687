"""Wire Prometheus into the app: one registry per app, the /metrics route, latency middleware."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from app.observability.collector import CalmonCollector
from app.observability.service_metrics import RequestLatencyMiddleware, ServiceMetrics
from app.settings import Settings

router = APIRouter(tags=["observability"])


@router.get("/metrics", response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text format: domain gauges from the database, and this process's counters.

    Open like /healthz (no token): it carries model names and metric values, no predictions.
    """
    registry: CollectorRegistry = request.app.state.metrics_registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def install_metrics(app: FastAPI, settings: Settings) -> None:
    """Give ``app`` its metrics registry, ``GET /metrics`` and request-latency observation.

    A registry per app (not prometheus_client's global one) keeps several apps in one process,
    as tests create them, from colliding on metric names.
    """
    registry = CollectorRegistry()
    service = ServiceMetrics(registry)
    registry.register(
        CalmonCollector(
            lambda: app.state.session_factory, lease_seconds=settings.worker_lease_seconds
        )
    )
    app.state.metrics_registry = registry
    app.state.service_metrics = service
    app.add_middleware(RequestLatencyMiddleware, histogram=service.request_duration)
    app.include_router(router)
