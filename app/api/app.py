"""The application factory. Importing this module connects to nothing."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from fastapi import FastAPI

from app import __version__
from app.api.errors import install_error_handlers
from app.api.inputs import UrlRulesMiddleware
from app.api.openapi import install_openapi
from app.api.responses import document_errors
from app.api.routers import (
    analyses,
    audit,
    batches,
    health,
    metrics,
    models,
    monitoring,
    service_status,
    tokens,
)
from app.api.webui import install_webui
from app.api.write_health import WriteHealth
from app.db.engine import create_db_engine, create_probe_engine, create_session_factory
from app.db.migrate import head_revisions
from app.observability.prometheus import install_metrics
from app.settings import Settings, get_settings

logger = logging.getLogger("calmon.api")

LifespanHook = Callable[[FastAPI], AbstractAsyncContextManager[None]]
"""Something that runs beside the API for the app's lifetime (e.g. the embedded worker).

It is entered after the engine exists (``app.state.engine``, ``app.state.session_factory``,
``app.state.settings``) and exited before the engine is disposed.
"""

ROUTER_MODULES = (
    health,
    models,
    tokens,
    audit,
    batches,
    metrics,
    monitoring,
    analyses,
    service_status,
)
"""The API's routers, in the order the OpenAPI document lists them."""


def create_app(
    settings: Settings | None = None, *, lifespan_hooks: Sequence[LifespanHook] = ()
) -> FastAPI:
    """Build the calmon API for ``settings`` (the process settings if omitted)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_db_engine(settings)
        app.state.engine = engine
        app.state.session_factory = create_session_factory(engine)
        app.state.probe_engine = create_probe_engine(settings)
        app.state.expected_revisions = head_revisions(settings.database_url)
        if settings.auth_disabled:
            logger.warning(
                "auth_disabled",
                extra={
                    "detail": "CALMON_AUTH_DISABLED=true: every request is accepted "
                    "without a token, with all scopes. Never expose this instance."
                },
            )
        try:
            async with AsyncExitStack() as stack:
                for hook in lifespan_hooks:
                    await stack.enter_async_context(hook(app))
                yield
        finally:
            engine.dispose()
            app.state.probe_engine.dispose()

    # /docs is served by install_webui from vendored assets (FastAPI's own page loads a CDN);
    # ReDoc is not offered: it would need a second megabyte-sized bundle.
    app = FastAPI(
        title="calmon", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    app.state.settings = settings
    app.state.write_health = WriteHealth()
    app.state.ingest_slots = threading.BoundedSemaphore(settings.max_concurrent_ingest)
    install_error_handlers(app)
    app.add_middleware(UrlRulesMiddleware)
    install_metrics(app, settings)
    for module in ROUTER_MODULES:
        document_errors(module.router)
        app.include_router(module.router)
    install_webui(app)
    install_openapi(app)
    return app
