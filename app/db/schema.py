"""The complete table metadata: every module that defines tables is imported here.

Alembic's env.py and the models-match-migrations test read ``metadata`` from this module, so a
table module that is not imported here would silently fall out of autogenerate.
"""

from __future__ import annotations

from app.db import metrics_tables, tables  # noqa: F401  (registers the tables on Base.metadata)
from app.db.base import Base

metadata = Base.metadata
