"""Test modules share code only through tests/support: no test module imports another.

A helper defined in a test module and imported elsewhere drags that module's tests, fixtures
and import-time work along, and hides the helper from whoever looks for it in tests/support.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from tests.support import server
from tests.support.api import get_json
from tests.support.server import calmon_process

TESTS = Path(__file__).resolve().parent
SHARED = "tests.support"


def _module_name(path: Path) -> str:
    parts = path.relative_to(TESTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_test_modules(source: str, module: str) -> list[str]:
    """The modules under ``tests`` that ``source`` (the module ``module``) imports, other than
    tests.support and its submodules; relative imports are resolved against ``module``."""
    found: list[str] = []
    package = module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            # `from tests import conftest` (a package) imports the module tests.conftest.
            is_package = (TESTS.parent / base.replace(".", "/")).is_dir()
            names = [f"{base}.{alias.name}" for alias in node.names] if is_package else [base]
        else:
            continue
        for name in names:
            shared = name == SHARED or name.startswith(f"{SHARED}.")
            if name.startswith("tests.") and not shared:
                found.append(name)
    return found


def test_no_test_module_imports_another() -> None:
    offenders = {
        str(path.relative_to(TESTS.parent)): imported
        for path in sorted(TESTS.rglob("*.py"))
        if (imported := imported_test_modules(path.read_text(), _module_name(path)))
    }
    assert offenders == {}, "move the shared code to tests/support"


def test_the_check_sees_every_form_of_import() -> None:
    """The check above can fail: each way of reaching a test module is reported."""
    module = "tests.integration.test_a"
    source = "\n".join(
        [
            "from tests.conftest import AuthHeaders",
            "import tests.static.test_rules",
            "from tests import conftest",
            "from .test_b import helper",
            "from . import test_d",
            "from ..metrics.test_c import curve",
            "from tests.support.api import AuthHeaders",
            "from tests.support import waiting",
            "import tests.support.waiting",
            "import tests",
        ]
    )
    assert imported_test_modules(source, module) == [
        "tests.conftest",
        "tests.static.test_rules",
        "tests.conftest",
        "tests.integration.test_b",
        "tests.integration.test_d",
        "tests.metrics.test_c",
    ]


def test_get_json_keeps_a_query_written_in_the_path() -> None:
    """httpx replaces the URL's query with ``params``: get_json must not pass empty ones."""
    app = FastAPI()

    @app.get("/echo")
    def echo(request: Request) -> dict[str, str]:
        return {"query": request.url.query}

    with TestClient(app) as client:
        assert get_json(client, {}, "/echo?metric=recall") == {"query": "metric=recall"}
        assert get_json(client, {}, "/echo", metric="f1") == {"query": "metric=f1"}


def test_a_process_log_stays_in_the_sessions_directory(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with calmon_process(["--help"], "sqlite://") as (process, log_path):
        process.wait(timeout=60)
    assert log_path.is_relative_to(tmp_path_factory.getbasetemp())
    assert "calmon" in log_path.read_text()  # still there for the test to read


def test_outside_a_test_session_a_process_log_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "_log_roots", [])  # as a bench or a script runs it
    with calmon_process(["--help"], "sqlite://") as (process, log_path):
        process.wait(timeout=60)
        assert "calmon" in log_path.read_text()
    assert not log_path.parent.exists()
