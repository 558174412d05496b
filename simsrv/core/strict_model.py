"""Validate plain dictionaries against pydantic models with one-line, field-naming errors."""

from __future__ import annotations

import json
import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from simsrv.core.errors import InputError, shown

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every scenario section: unknown keys are errors, instances are immutable, and
    numbers are finite (NaN and infinity are never a valid input) and written as numbers (a
    boolean or a numeric string such as ``"0"`` is refused, not converted, and so is a float
    such as ``1e4`` where a whole number is wanted)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, data: Any) -> Any:
        """``true`` or ``"1"`` is not a number and ``1`` or ``"yes"`` is not a boolean:
        pydantic would convert them."""
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name)
                if field is not None and field.annotation is bool and not isinstance(value, bool):
                    raise ValueError(f"{name}: must be true or false, got {_as_toml(value)}")
            for wrong, what in (
                (_bool_for_number, "a number, not a boolean"),
                (_string_for_number, "a number, not a string"),
                (_float_for_whole, "a whole number, not a float"),
            ):
                for name, value in data.items():
                    field = cls.model_fields.get(name)
                    if field is None or not wrong(field.annotation, value):
                        continue
                    if isinstance(value, dict):  # name the entry: costs.world_base
                        name, value = next(
                            (f"{name}.{key}", v)
                            for key, v in value.items()
                            if wrong(field.annotation, {key: v})
                        )
                    raise ValueError(f"{name}: must be {what}, got {_as_toml(value)}")
        return data


def _as_toml(value: Any) -> str:
    """``value`` as the user wrote it (``true``, ``"yes"``), cut to a message's length."""
    return shown(value, render=lambda v: json.dumps(v, default=str))  # a TOML date: its text


def validate(model: type[M], data: Any, prefix: str) -> M:
    """Validate ``data`` as ``model``; raise :class:`InputError` naming ``prefix.field``.

    Parameters
    ----------
    model:
        The pydantic model class of the section.
    data:
        The raw (TOML-decoded) value.
    prefix:
        Dotted name of the section in the scenario (``"machine"``, ``"server.options"``).
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{prefix}: must be a table of fields, got {shown(data)}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InputError(first_error_line(error, model, prefix)) from None


def first_error_line(error: ValidationError, model: type[BaseModel], prefix: str) -> str:
    errors = error.errors()
    first = errors[0]
    loc = _field_path(first)
    field = ".".join([prefix, *loc]) if prefix else ".".join(loc)
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        owner = _owner_model(model, loc[:-1])
        allowed = ", ".join(sorted(owner.model_fields)) or "none"
        return f"{field}: unknown field; allowed fields: {allowed}"
    if kind == "missing":
        return f"{field}: required field is missing"
    # a union (``int | Literal["per-client"]``) reports one error per alternative
    alternatives = [e.get("msg", "") for e in errors if _field_path(e) == loc]
    message = "; or ".join(dict.fromkeys(alternatives)) or "invalid value"
    if message.startswith("Value error, "):
        # a model-level check: its message starts with the field it is about
        message = message.removeprefix("Value error, ")
        name, _, rest = message.partition(": ")
        if rest and all(part.isidentifier() for part in name.split(".")):
            return f"{field}.{name}: {rest}"
        return f"{field}: {message}"
    value = first.get("input")
    got = "" if isinstance(value, dict) else f", got {shown(value)}"
    return f"{field}: {message}{got}"


def _bool_for_number(annotation: Any, value: Any) -> bool:
    """True when ``value`` is, or holds, a boolean where ``annotation`` wants a number (or a
    literal that is not a boolean).  Other type mismatches are left to pydantic."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _bool_for_number(get_args(annotation)[0], value)
    if origin in (Union, types.UnionType):
        members = [m for m in get_args(annotation) if m is not type(None)]  # optional: unset
        return all(_bool_for_number(member, value) for member in members)
    if isinstance(value, bool):
        if origin is Literal:
            return not any(isinstance(choice, bool) for choice in get_args(annotation))
        return annotation in (int, float)
    args = get_args(annotation)
    if isinstance(value, list | tuple) and isinstance(origin, type):
        if not issubclass(origin, Sequence | set | frozenset) or not args:
            return False
        if origin is tuple and args[-1] is not Ellipsis:
            return any(_bool_for_number(a, v) for a, v in zip(args, value, strict=False))
        return any(_bool_for_number(args[0], v) for v in value)
    if isinstance(value, dict) and origin is dict and len(args) == 2:
        return any(_bool_for_number(args[1], v) for v in value.values())
    return False


def _string_for_number(annotation: Any, value: Any) -> bool:
    """True when ``value`` is, or holds, a string where ``annotation`` wants a number and no
    other member of the annotation takes that string (``"0"`` for a float: pydantic would
    convert it; ``"per-client"`` for ``int | Literal["per-client"]`` is fine)."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _string_for_number(args[0], value)
    if origin in (Union, types.UnionType):
        members = [m for m in args if m is not type(None)]
        if isinstance(value, str) and any(_takes_string(m, value) for m in members):
            return False
        return any(_string_for_number(member, value) for member in members)
    if isinstance(value, str):
        return annotation in (int, float)
    if isinstance(value, list | tuple) and isinstance(origin, type):
        if not issubclass(origin, Sequence | set | frozenset) or not args:
            return False
        if origin is tuple and args[-1] is not Ellipsis:
            return any(_string_for_number(a, v) for a, v in zip(args, value, strict=False))
        return any(_string_for_number(args[0], v) for v in value)
    if isinstance(value, dict) and origin is dict and len(args) == 2:
        return any(_string_for_number(args[1], v) for v in value.values())
    return False


def _float_for_whole(annotation: Any, value: Any) -> bool:
    """True when ``value`` is, or holds, a float where ``annotation`` wants a whole number and
    no other member takes a float (``1e4`` for ``seeds``: pydantic would take 10000.0 as
    10000)."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _float_for_whole(args[0], value)
    if origin in (Union, types.UnionType):
        members = [m for m in args if m is not type(None)]
        if isinstance(value, float) and any(_takes_float(m) for m in members):
            return False
        return any(_float_for_whole(member, value) for member in members)
    if isinstance(value, float):
        return annotation is int
    if isinstance(value, list | tuple) and isinstance(origin, type):
        if not issubclass(origin, Sequence | set | frozenset) or not args:
            return False
        if origin is tuple and args[-1] is not Ellipsis:
            return any(_float_for_whole(a, v) for a, v in zip(args, value, strict=False))
        return any(_float_for_whole(args[0], v) for v in value)
    if isinstance(value, dict) and origin is dict and len(args) == 2:
        return any(_float_for_whole(args[1], v) for v in value.values())
    return False


def _takes_float(member: Any) -> bool:
    origin = get_origin(member)
    if origin is Annotated:
        return _takes_float(get_args(member)[0])
    return member is float or (origin is None and member not in (int, str, bool))


def _takes_string(member: Any, value: str) -> bool:
    """Whether a union member accepts the string ``value`` as it is (a string type, a literal
    choice, or anything that is not a number: pydantic decides)."""
    origin = get_origin(member)
    if origin is Annotated:
        return _takes_string(get_args(member)[0], value)
    if origin is Literal:
        return value in get_args(member)
    return member not in (int, float)


def _owner_model(model: type[BaseModel], path: list[str]) -> type[BaseModel]:
    for part in path:
        field = model.model_fields.get(part)
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model = annotation
    return model


_TYPE_TAGS = {"int", "float", "str", "bool", "list", "dict", "none"}


def _field_path(error: dict) -> list[str]:
    """The error's location as field names: pydantic's union-member tags (``int``,
    ``constrained-int``, ``literal['per-client']``, ``function-after[...]``) removed."""
    return [
        str(part)
        for part in error.get("loc", ())
        if not (str(part) in _TYPE_TAGS or "[" in str(part) or "-" in str(part))
    ]
