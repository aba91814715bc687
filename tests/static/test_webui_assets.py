"""The web UI's files: vendored assets unchanged and licensed, all shipped, no other origin.

The browser tests (tests/e2e/test_webui.py) prove the pages work offline; these checks run
without a browser or a database.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.webui import STATIC_DIR
from tests.support.databases import settings_for
from tests.support.server import REPO_ROOT

VENDOR = STATIC_DIR / "vendor"
MANIFEST: dict[str, Any] = json.loads((VENDOR / "manifest.json").read_text())
PACKAGES = {package["name"]: package for package in MANIFEST["packages"]}


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_vendored_files_are_the_npm_packages_own(name: str) -> None:
    package = PACKAGES[name]
    directory = VENDOR / package["directory"]
    assert (directory / "LICENSE").is_file()
    on_disk = {path.name for path in directory.iterdir()}
    assert on_disk == set(package["files"].values()) == set(package["sha256"])
    for file, digest in package["sha256"].items():
        assert hashlib.sha256((directory / file).read_bytes()).hexdigest() == digest, file


def test_the_charting_library_is_small() -> None:
    size = (VENDOR / "uplot" / "uPlot.iife.min.js").stat().st_size
    assert size < 60_000  # uPlot 1.6.32: 51,081 bytes (22 KB gzipped)


def test_every_ui_file_ships_in_the_wheel() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    patterns: list[str] = pyproject["tool"]["setuptools"]["package-data"]["app"]
    package_root = REPO_ROOT / "app"
    for path in STATIC_DIR.rglob("*"):
        if path.is_file():
            relative = path.relative_to(package_root).as_posix()
            # setuptools' '*' stops at '/', like fnmatch on each level's depth here.
            assert any(
                fnmatch.fnmatch(relative, p) and relative.count("/") == p.count("/")
                for p in patterns
            ), relative


def _own_files() -> list[Path]:
    return [p for p in STATIC_DIR.iterdir() if p.is_file() and p.suffix in {".html", ".js", ".css"}]


@pytest.mark.parametrize("path", _own_files(), ids=lambda p: p.name)
def test_own_files_load_nothing_from_another_origin(path: Path) -> None:
    # The SVG namespace is a name (createElementNS), never fetched: the only URL allowed.
    text = path.read_text().replace('"http://www.w3.org/2000/svg"', "SVG_NAMESPACE")
    assert not re.search(r"https?://|//cdn|@import", text), path.name


def test_docs_page_loads_the_vendored_swagger_ui(tmp_path: Path) -> None:
    # No lifespan (no `with`): these two pages touch no database.
    client = TestClient(create_app(settings_for(f"sqlite:///{tmp_path}/unused.sqlite3")))
    page = client.get("/docs").text
    assert not re.search(r"https?://", page)
    for asset in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert asset.startswith("/ui/static/vendor/swagger-ui/"), asset
        assert client.get(asset).status_code == 200, asset
    assert client.get("/redoc").status_code == 404
    ui = client.get("/ui/")
    assert ui.status_code == 200
    assert 'data-auth="required"' in ui.text
    assert "default-src 'self'" in ui.headers["content-security-policy"]
    root = client.get("/", follow_redirects=False)
    assert root.status_code == 307
    assert root.headers["location"] == "/ui/"


def test_the_page_asks_for_no_token_when_auth_is_off(tmp_path: Path) -> None:
    settings = settings_for(f"sqlite:///{tmp_path}/unused.sqlite3", auth_disabled=True)
    assert 'data-auth="disabled"' in TestClient(create_app(settings)).get("/ui/").text
