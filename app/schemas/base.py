"""The base of every request body pydantic reads: the input rules applied to each field once.

Subclasses get, for every field whatever its type: strings without NUL, integers a database
``integer`` holds, and no ``true``/``false`` or string where a number is expected (pydantic's
lax mode would read ``false`` as 0 and ``"0.5"`` as 0.5, while ingestion refuses a string
score: a number is a JSON number, everywhere). A subclass therefore cannot forget a rule when
it adds a field.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from pydantic.config import JsonDict
from pydantic_core import InitErrorDetails, PydanticCustomError

from app.input_rules import check_integer, check_text
from app.schemas.glossary import describe_properties

_BOOL_NOT_NUMBER = PydanticCustomError("bool_type", "must not be a boolean")
_STRING_NOT_NUMBER = PydanticCustomError(
    "number_type", "must be a JSON number, not a string (send it unquoted)"
)
_NUMBERS: Final = (int, float)


def _members(annotation: Any) -> list[Any]:
    """The types a value of ``annotation`` may be: Annotated unwrapped, unions spread."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [member for arg in typing.get_args(annotation) for member in _members(arg)]
    return [annotation]


def _admits(annotation: Any, kinds: tuple[type, ...]) -> bool:
    """Whether ``annotation`` admits a value of one of ``kinds`` (a Literal: of its values)."""
    for member in _members(annotation):
        if typing.get_origin(member) is typing.Literal:
            if any(type(value) in kinds for value in typing.get_args(member)):
                return True
        elif member in kinds:
            return True
    return False


def _strings_for_numbers(
    annotation: Any, value: Any, loc: tuple[str | int, ...]
) -> Iterator[tuple[str | int, ...]]:
    """Where ``value`` holds a string that ``annotation`` wants a number for (arrays of
    numbers and tuples of them included; a nested request model checks itself)."""
    if isinstance(value, str):
        if _admits(annotation, _NUMBERS) and not _admits(annotation, (str,)):
            yield loc
        return
    if not isinstance(value, list):
        return
    for member in _members(annotation):
        origin, args = typing.get_origin(member), typing.get_args(member)
        if origin is list and args:
            items = [args[0]] * len(value)
        elif origin is tuple and args:
            items = [args[0]] * len(value) if args[-1] is Ellipsis else list(args)
        else:
            continue
        for index, (item, entry) in enumerate(zip(items, value, strict=False)):
            yield from _strings_for_numbers(item, entry, (*loc, index))
        return


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
    def _numbers_are_numbers(cls, data: Any) -> Any:
        # A model validator, not a field one: pydantic allows no "before" validator on the
        # discriminator fields (pi0's policy, a reference's kind) that "*" would include.
        if not isinstance(data, dict):
            return data
        fields = {name: value for name, value in data.items() if name in cls.model_fields}
        errors = [
            InitErrorDetails(type=_BOOL_NOT_NUMBER, loc=(name,), input=value)
            for name, value in fields.items()
            if isinstance(value, bool) and not _admits(cls.model_fields[name].annotation, (bool,))
        ]
        errors += [
            InitErrorDetails(type=_STRING_NOT_NUMBER, loc=loc, input=value)
            for name, value in fields.items()
            for loc in _strings_for_numbers(cls.model_fields[name].annotation, value, (name,))
        ]
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return data

    @field_validator("*", mode="after")
    @classmethod
    def _input_rules(cls, value: Any) -> Any:
        _check_leaves(value)
        return value
