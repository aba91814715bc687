"""Drive the system's Chromium (Debian's ``chromium``) with Playwright for the web UI tests.

Playwright never downloads a browser here: it launches the executable the system package
installed (``executable_path``). Without one the tests skip with the reason, except under
``CI=true``, where CI installs ``chromium`` and a missing browser must fail.

Every page opened through :func:`watched_page` blocks requests to any origin but calmon's own
(so a page that still needs a CDN breaks visibly) and records console errors, uncaught page
errors and failed requests for the test to assert on.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from tests.support.tools import require_module

# Without the browser extra, every module that imports this one (the web UI tests) skips here,
# saying what to install; under CI=true it fails.
require_module("playwright", "browser")

from playwright.sync_api import (  # noqa: E402
    Browser,
    ConsoleMessage,
    Page,
    Request,
    Response,
    Route,
    sync_playwright,
)

# The test modules take playwright's types from here, after the check above.
__all__ = [
    "Browser",
    "Page",
    "PageLog",
    "Request",
    "Route",
    "chromium",
    "require_chromium",
    "watched_page",
]

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def chromium_path() -> str | None:
    """The system Chromium's executable, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path is not None:
            return path
    return None


def require_chromium() -> str:
    """The executable; skips the test without one (fails under CI=true, which installs it)."""
    path = chromium_path()
    if path is not None:
        return path
    reason = "no system Chromium on PATH (apt-get install chromium); the browser tests need it"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}")
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless system Chromium for the duration of the block."""
    executable = require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageLog:
    """What went wrong while a page was open."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    bad_responses: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Everything but the blocked foreign requests (a page may try one and cope)."""
        return [*self.console_errors, *self.page_errors, *self.failed_requests, *self.bad_responses]


@contextmanager
def watched_page(
    browser: Browser, base_url: str, *, width: int = 1280, height: int = 900
) -> Iterator[tuple[Page, PageLog]]:
    """A fresh browser context (its own session storage) whose page may reach only base_url."""
    own = urlsplit(base_url).netloc
    log = PageLog()
    context = browser.new_context(viewport={"width": width, "height": height})

    def only_calmon(route: Route) -> None:
        url = route.request.url
        if urlsplit(url).scheme in {"data", "blob"} or urlsplit(url).netloc == own:
            route.continue_()
            return
        log.blocked.append(url)
        route.abort("blockedbyclient")

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            log.console_errors.append(f"console: {message.text}")

    def on_failed(request: Request) -> None:
        if request.url not in log.blocked:
            log.failed_requests.append(f"failed: {request.url} {request.failure}")

    def on_response(response: Response) -> None:
        if response.status >= 400:
            log.bad_responses.append(f"HTTP {response.status}: {response.url}")

    context.route("**/*", only_calmon)
    page = context.new_page()
    page.on("console", on_console)
    page.on("pageerror", lambda error: log.page_errors.append(f"page error: {error}"))
    page.on("requestfailed", on_failed)
    page.on("response", on_response)
    try:
        yield page, log
    finally:
        context.close()
