"""The base of every request body pydantic reads: the input rules applied to each field once.

Subclasses get, for every field whatever its type: strings without NUL, integers a database
``integer`` holds, and no ``true``/``false`` where a number is expected (pydantic's lax mode
would read ``false`` as 0). A subclass therefore cannot forget a rule when it adds a field.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from pydantic.config import JsonDict
from pydantic_core import InitErrorDetails, PydanticCustomError

from app.input_rules import check_integer, check_text
from app.schemas.glossary import describe_properties

_BOOL_NOT_NUMBER = PydanticCustomError("bool_type", "must not be a boolean")


def _admits_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _admits_bool(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_admits_bool(arg) for arg in typing.get_args(annotation))
    return False


def _check_leaves(value: Any) -> None:
    """Apply the rules to every string and integer in ``value`` (nested models check
    themselves)."""
    if isinstance(value, str):
        check_text(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        check_integer(value)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            _check_leaves(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_leaves(key)
            _check_leaves(item)


def _describe(schema: JsonDict, cls: type[Any]) -> None:
    describe_properties(schema, getattr(cls, "field_glossary", None))


class ResponseModel(BaseModel):
    """A response body; its OpenAPI properties described from the glossary where they do not
    describe themselves (app.schemas.glossary)."""

    model_config = ConfigDict(json_schema_extra=_describe)


class RequestModel(BaseModel):
    """A request body: unknown fields refused, and the input rules on every field."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_describe)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, data: Any) -> Any:
        # A model validator, not a field one: pydantic allows no "before" validator on the
        # discriminator fields (pi0's policy, a reference's kind) that "*" would include.
        if not isinstance(data, dict):
            return data
        errors = [
            InitErrorDetails(type=_BOOL_NOT_NUMBER, loc=(name,), input=value)
            for name, value in data.items()
            if isinstance(value, bool)
            and name in cls.model_fields
            and not _admits_bool(cls.model_fields[name].annotation)
        ]
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return data

    @field_validator("*", mode="after")
    @classmethod
    def _input_rules(cls, value: Any) -> Any:
        _check_leaves(value)
        return value
