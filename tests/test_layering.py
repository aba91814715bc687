"""The layering of docs/architecture.md, checked on the source (ast), so a new violation fails.

Two rules:

1. Arrows point down only: app.worker and app.api sit on the use cases (app.services, and
   app.windows: a claimed window's computation), which sit on app.db and the pure layers
   (app.ingest: parsing, validation, windows; app.monitoring; app.metrics). No lower layer
   imports app.worker or app.api, app.services not app.windows, app.db no use case, the pure
   layers no app.db and no database library, and app.metrics nothing else from app. The
   worker, an adapter like the API, imports no repository: it calls use cases only.
2. SQL lives in app/db, and only app/db/driver.py reaches the DB-API connection. Outside app/db
   no module imports a SQL builder or a driver (sqlalchemy's ``select``, ``text``, ``insert``,
   ``update``, ``delete``, ...; ``sqlalchemy.dialects``, ``sqlalchemy.sql``, ``psycopg``,
   ``sqlite3``) nor calls ``execute``/``get``/``scalar(s)``/... on a session, connection or
   cursor. Holding a ``Session`` and passing it to a repository is
   fine (that is how a use case chooses its transaction), and so is ``session.flush()``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import app

APP_DIR = Path(app.__file__).parent
# What each lower layer must not import (docs/architecture.md, "Layers and arrows"). app.worker
# and app.api sit on top; app.metrics imports nothing else from app at all.
_TOP = ("app.worker", "app.api")
# app.windows (a claimed window's computation) is a use case beside app.services.
_USE_CASES = ("app.services", "app.windows")
# The worker is an adapter: it claims, leases and retries through use cases (app.windows.queue,
# app.windows.compute), never a repository of its own (a hidden service layer otherwise).
REPOSITORIES = "app.db.repositories"
FORBIDDEN = {
    "app.worker": (REPOSITORIES,),
    "app.services": (*_TOP, "app.windows"),
    "app.windows": _TOP,
    "app.db": (*_USE_CASES, *_TOP),
    "app.ingest": ("app.db", *_USE_CASES, *_TOP),
    "app.monitoring": ("app.ingest", "app.db", *_USE_CASES, *_TOP),
    "app.metrics": ("app",),
}
# The pure layers do no I/O: no database library at all, not even a Session type.
PURE = ("app.ingest", "app.monitoring", "app.metrics")
DATABASE_LIBRARIES = ("sqlalchemy", "psycopg", "sqlite3")
SQL_HOME = "app.db"
DRIVER_HOME = "app.db.driver"  # the one way to the DB-API connection
SQL_MODULES = ("psycopg", "sqlite3", "sqlalchemy.dialects", "sqlalchemy.sql")
SQL_NAMES = frozenset(
    {
        "select",
        "text",
        "insert",
        "update",
        "delete",
        "func",
        "and_",
        "or_",
        "case",
        "exists",
        "literal",
        "literal_column",
        "bindparam",
        "union_all",
    }
)
QUERY_METHODS = frozenset(
    {"execute", "executemany", "exec_driver_sql", "get", "scalar", "scalars", "query"}
)
# What a query method is called on: a name (or attribute) saying it holds a database handle.
HANDLE_WORDS = ("session", "connection", "cursor")


def _within(module: str, packages: tuple[str, ...] | str) -> bool:
    prefixes = (packages,) if isinstance(packages, str) else packages
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _imports(module: str, tree: ast.Module) -> list[tuple[int, list[str], list[str]]]:
    """(line, modules, names) of every import: the modules it may load (``from app import
    worker`` loads app or app.worker), the names it takes; relative imports resolved."""
    out: list[tuple[int, list[str], list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, [alias.name], []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            names = [alias.name for alias in node.names]
            out.append((node.lineno, [base, *(f"{base}.{name}" for name in names)], names))
    return out


def _handle_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):  # session.connection().execute(...)
        return _handle_name(node.func)
    return None


def violations(module: str, source: str) -> list[str]:
    """The layering rules ``module`` (a dotted name under app) breaks, one line each."""
    tree = ast.parse(source)
    found: list[str] = []
    layer = next((layer for layer in FORBIDDEN if _within(module, layer)), None)
    for line, modules, names in _imports(module, tree):
        if layer is not None:
            upward = [m for m in modules if _within(m, FORBIDDEN[layer]) and not _within(m, layer)]
            if upward:
                found.append(f"{module}:{line}: {layer} must not import {upward[0]}")
        if _within(module, PURE) and _within(modules[0], DATABASE_LIBRARIES):
            found.append(f"{module}:{line}: a pure layer imports {modules[0]}")
            continue
        if _within(module, SQL_HOME):
            continue
        imported = modules[0]
        if _within(imported, SQL_MODULES):
            found.append(f"{module}:{line}: SQL outside app/db: imports {imported}")
        elif imported == "sqlalchemy" and SQL_NAMES.intersection(names):
            builders = ", ".join(sorted(SQL_NAMES.intersection(names)))
            found.append(f"{module}:{line}: SQL outside app/db: imports sqlalchemy {builders}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "driver_connection"
            and module != DRIVER_HOME
        ):
            found.append(f"{module}:{node.lineno}: driver connection reached outside {DRIVER_HOME}")
    if _within(module, SQL_HOME):
        return found
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, handle = node.func.attr, _handle_name(node.func.value)
        if method in QUERY_METHODS and handle and any(w in handle.lower() for w in HANDLE_WORDS):
            found.append(f"{module}:{node.lineno}: SQL outside app/db: {handle}.{method}()")
    return found


def _app_modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(APP_DIR.rglob("*.py")):
        parts = path.relative_to(APP_DIR.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def test_the_app_keeps_its_layers() -> None:
    modules = _app_modules()
    assert len(modules) > 100  # the walk found the package, not an empty directory
    found = [v for name, path in modules for v in violations(name, path.read_text())]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("app.services.x", "from app.worker.loop import run", "must not import app.worker"),
        ("app.db.repositories.x", "import app.api.deps", "must not import app.api"),
        ("app.db.x", "from app.services.models import get_model", "must not import app.services"),
        ("app.db.x", "from app.windows.compute import compute_claim", "must not import app.windo"),
        ("app.windows.x", "from app.worker.loop import Worker", "must not import app.worker"),
        ("app.worker.loop", "from app.db.repositories.window_queue import Claim", "app.db.reposit"),
        ("app.worker.x", "from app.db import repositories", "must not import app.db.repositories"),
        ("app.services.x", "from app.windows import compute", "must not import app.windows"),
        ("app.ingest.x", "from app.api import deps", "must not import app.api"),
        ("app.ingest.x", "from app.db.tables import Batch", "must not import app.db"),
        ("app.metrics.x", "from ..worker import loop", "must not import app.worker"),
        ("app.metrics.x", "from app.errors import NotFoundError", "must not import app.errors"),
        ("app.monitoring.x", "from app import worker", "must not import app.worker"),
        ("app.monitoring.x", "from sqlalchemy.orm import Session", "a pure layer imports sqla"),
        ("app.services.x", "from sqlalchemy import func, select", "imports sqlalchemy func"),
        ("app.worker.x", "import psycopg", "imports psycopg"),
        ("app.api.x", "from sqlalchemy.dialects import postgresql", "imports sqlalchemy.dia"),
        ("app.worker.x", "model = session.get(Model, 1)", "session.get()"),
        ("app.ingest.x", "self.session.execute(statement)", "session.execute()"),
        ("app.services.x", "session.connection().exec_driver_sql('x')", "connection.exec"),
        ("app.observability.x", "rows = db_session.scalars(query)", "db_session.scalars()"),
        ("app.db.bulk", "raw = connection.connection.driver_connection", "driver connection"),
    ],
)
def test_a_violation_is_caught(module: str, source: str, expected: str) -> None:
    found = violations(module, source)
    assert len(found) == 1, found
    assert expected in found[0]


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("app.db.repositories.x", "from sqlalchemy import select\nsession.execute(select(1))"),
        ("app.worker.x", "from sqlalchemy.orm import Session, sessionmaker"),
        ("app.services.x", "from sqlalchemy.exc import IntegrityError\nsession.flush()"),
        ("app.worker.x", "from app.services.models import get_model"),
        ("app.worker.x", "from app.windows.queue import Claim, claim_window"),
        ("app.worker.runner", "from app.db.engine import create_db_engine"),
        ("app.services.x", "from app.ingest.validate import validate"),
        ("app.metrics.x", "from app.metrics.sketch import CurveSketch"),
        ("app.monitoring.x", "from app.metrics import evaluate"),
        ("app.api.x", "from app.worker.loop import run\nsettings.get('x')"),
    ],
)
def test_allowed_code_passes(module: str, source: str) -> None:
    assert violations(module, source) == []


VERDICT_TYPES = frozenset({"StoredVerdict", "Judgement"})
VERDICT_HOME = "app.monitoring"
VERDICT_READERS = "app.db"  # a repository rebuilds the stored verdict from its row


def verdicts_decided(module: str, source: str) -> list[str]:
    """Where ``module`` builds a verdict itself: every verdict rule lives in app.monitoring
    (app/monitoring/verdicts.py), which the rest of the app only calls."""
    if _within(module, (VERDICT_HOME, VERDICT_READERS)):
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _handle_name(node.func) in VERDICT_TYPES:
            found.append(f"{module}:{node.lineno}: a verdict decided outside {VERDICT_HOME}")
    return found


def test_verdicts_are_decided_in_monitoring_only() -> None:
    found = [v for name, path in _app_modules() for v in verdicts_decided(name, path.read_text())]
    assert found == [], "\n".join(found)


def test_a_verdict_built_elsewhere_is_caught() -> None:
    source = 'verdict = StoredVerdict("reference", "part of it")'
    assert verdicts_decided("app.windows.judging", source) != []
    assert verdicts_decided("app.monitoring.verdicts", source) == []
