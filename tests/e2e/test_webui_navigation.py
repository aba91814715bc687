"""The web UI's router when pages finish out of order (a real browser, a real `calmon serve`).

A quick second click starts a newer page while the first still waits for the API. Whichever
finishes last, the newer page is what stays on screen and what ``data-ready`` names: the first
page's answers are held back here until the second page is drawn, then let through.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.browser import (
    Browser,
    Request,
    Route,
    chromium,
    require_chromium,
    watched_page,
)
from tests.support.server import LiveServer, running_server
from tests.support.webui_pages import make_token, open_page, wait_ready

pytestmark = pytest.mark.e2e

MODELS = ("first", "second")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    """A server with two models (no rows: their pages need only a few requests) and a read
    token."""
    require_chromium()
    directory = tmp_path_factory.mktemp("navigation")
    database_url = f"sqlite:///{(directory / 'calmon.sqlite3').as_posix()}"
    with running_server(database_url, log_dir=directory) as live:
        admin = make_token(database_url, "seed", "admin")
        for name in MODELS:
            response = httpx.post(
                f"{live.base_url}/v1/models",
                json={"name": name, "threshold": 0.5},
                headers={"Authorization": f"Bearer {admin}"},
            )
            assert response.status_code == 201, response.text
        yield live, make_token(database_url, "ui", "read")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def test_a_page_that_finishes_after_a_newer_one_does_not_replace_it(
    server: tuple[LiveServer, str], browser: Browser
) -> None:
    live, token = server
    with watched_page(browser, live.base_url) as (page, log):
        open_page(page, live.base_url, token, "#/")
        held: list[Route] = []
        answered: list[str] = []
        released = False

        def count(request: Request) -> None:
            if "/models/first/" in request.url:
                answered.append(request.url)

        page.on("requestfinished", count)

        def hold(route: Route) -> None:  # the first page's answers wait until released
            if released:
                route.fallback()
            else:
                held.append(route)

        page.route("**/v1/models/first/**", hold)
        # Clicks on the models page's links: it stays on screen while the first page waits.
        page.click('a[href="#/models/first"]')
        page.wait_for_timeout(300)  # its requests are out (and held)
        assert held, "the first page sent no request to hold"
        page.click('a[href="#/models/second"]')
        wait_ready(page, "#/models/second")
        released = True
        for route in held:
            route.fallback()  # on to watched_page's own handler, which lets calmon's through
        # The late page gets its answers and draws (then the router draws the newest again).
        for _ in range(200):
            if len(answered) >= len(held):
                break
            page.wait_for_timeout(50)  # Playwright delivers events while it waits
        page.wait_for_timeout(500)
        wait_ready(page, "#/models/second")
        heading = page.locator("h1").first.inner_text()
        ready = page.locator("body").get_attribute("data-ready")
        assert not log.problems(), log.problems()
    assert heading.startswith("second"), heading
    assert ready == "#/models/second"
