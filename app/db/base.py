"""Declarative base with a constraint naming convention.

Named constraints make every migration reproducible: Alembic can drop or alter a constraint
by name on both PostgreSQL and SQLite (batch mode) instead of guessing a generated name.
"""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Base class of every calmon table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
