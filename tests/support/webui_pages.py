"""What the web UI's browser tests share: a token, opening a page, reading its numbers, and
where screenshots go (tests/e2e/test_webui*.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from app.db.engine import create_db_engine, create_session_factory
from app.schemas.tokens import Scope
from app.services.tokens import create_token
from tests.support.browser import Page
from tests.support.databases import settings_for
from tests.support.server import REPO_ROOT

SCREENSHOTS = REPO_ROOT / "docs" / "img"
DASH = "–"
"""What the pages show for a value that is not there."""
NOT_A_VALUE = re.compile(r"\b(?:null|NaN)\b")
"""A missing value printed as text instead of a dash (``replaceChildren(null)`` prints "null")."""


def make_token(
    database_url: str, name: str, *scopes: Scope, models: list[str] | None = None
) -> str:
    """A token with ``scopes`` (limited to ``models`` if given), written straight into the
    server's database."""
    engine = create_db_engine(settings_for(database_url))
    try:
        with create_session_factory(engine).begin() as session:
            return create_token(session, name, list(scopes), models).token
    finally:
        engine.dispose()


def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: docs/img (the docs site's web UI page shows them) under ``CI=true`` or
    ``CALMON_WRITE_SCREENSHOTS=1`` (a local run would otherwise rewrite tracked files), else a
    scratch directory."""
    if os.environ.get("CI") == "true" or os.environ.get("CALMON_WRITE_SCREENSHOTS") == "1":
        return SCREENSHOTS
    return tmp_path_factory.mktemp("screenshots")


def open_page(page: Page, base_url: str, token: str, fragment: str) -> float:
    """Load /ui/<fragment> with ``token`` in session storage; milliseconds until drawn."""
    page.add_init_script(f"sessionStorage.setItem('calmon.readToken', {token!r})")
    page.goto(f"{base_url}/ui/{fragment}")
    return wait_ready(page, fragment)


def wait_ready(page: Page, fragment: str) -> float:
    """Wait until the page has drawn ``fragment`` (its route); the milliseconds it took.

    Only selectors and attributes: the page's Content-Security-Policy forbids the string
    evaluation Playwright's wait_for_function would need, and the test keeps that policy on.
    """
    route = fragment or "#/"
    page.wait_for_selector(f'body[data-ready="{route}"]', state="attached", timeout=30_000)
    return float(page.locator("body").get_attribute("data-render-ms") or "nan")


def number(text: str) -> float:
    """A number as the page prints it ('0.4321', '1.234%', '+0.0123')."""
    match = re.fullmatch(r"\s*([+-]?\d+(?:\.\d+)?)(%?)\s*", text)
    assert match is not None, text
    value = float(match.group(1))
    return value / 100 if match.group(2) else value


def shown_value(page: Page, selector: str) -> float | None:
    """The number in the element (before any interval); None where the page shows a dash."""
    text = page.locator(selector).first.inner_text().split(" [")[0]
    return None if text.strip() == DASH else number(text)


def same(shown: float | None, api: float | None, abs_: float) -> bool:
    """The page shows the API's value to its printed precision, or a dash for null."""
    if api is None or shown is None:
        return shown is None and api is None
    return shown == pytest.approx(api, abs=abs_)


def printed_missing_values(page: Page) -> list[str]:
    """Where the page prints a missing value as text ("null", "NaN"), with some context."""
    text = page.locator("#app").inner_text()
    return [text[max(0, m.start() - 40) : m.end() + 40] for m in NOT_A_VALUE.finditer(text)]
