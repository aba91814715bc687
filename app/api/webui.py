"""The web UI and the API reference, served from calmon's own origin (nothing from a CDN).

``/`` sends a browser to ``/ui/``; ``/ui/`` is one HTML page whose scripts route between the
models overview, a model and a window (``#/models/{name}``, ``#/models/{name}/windows/{start}``).
The files hold no data, so they need no token; the data comes from the read-scope API.
``/docs`` is FastAPI's Swagger UI page pointed at the vendored Swagger UI assets.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from app.webui import STATIC_DIR, index_html

SWAGGER = "/ui/static/vendor/swagger-ui"
# The page's own files only: a script or style from anywhere else is refused by the browser.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)


def install_webui(app: FastAPI) -> None:
    """Serve the UI (``/``, ``/ui/``, ``/ui/static``) and the self-hosted ``/docs``."""
    app.mount("/ui/static", StaticFiles(directory=STATIC_DIR), name="ui-static")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/")

    @app.get("/ui", include_in_schema=False)
    @app.get("/ui/", include_in_schema=False)
    def ui_page(request: Request) -> HTMLResponse:
        page = index_html(auth_disabled=request.app.state.settings.auth_disabled)
        return HTMLResponse(page, headers={"Content-Security-Policy": CONTENT_SECURITY_POLICY})

    oauth2_redirect = "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} API",
            oauth2_redirect_url=oauth2_redirect,
            swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
            # No badge fetched from validator.swagger.io: nothing leaves calmon's origin.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get(oauth2_redirect, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
