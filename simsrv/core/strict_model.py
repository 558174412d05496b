"""Validate plain dictionaries against pydantic models with one-line, field-naming errors."""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, NamedTuple, TypeVar, Union, get_args, get_origin

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
            for rule in (_BOOLEAN, _STRING, _FLOAT):
                for name, value in data.items():
                    field = cls.model_fields.get(name)
                    if field is None or not _mistyped(field.annotation, value, rule):
                        continue
                    if isinstance(value, dict):  # name the entry: costs.world_base
                        name, value = next(
                            (f"{name}.{key}", v)
                            for key, v in value.items()
                            if _mistyped(field.annotation, {key: v}, rule)
                        )
                    raise ValueError(f"{name}: must be {rule.what}, got {_as_toml(value)}")
        return data

    def model_copy(self, *, update: Any = None, deep: bool = False) -> Any:
        """A copy with the fields of ``update`` replaced, validated as a new instance is (an
        unknown field, a value of the wrong type: one-line :class:`InputError` naming the
        model and the field).  ``deep`` is accepted for pydantic's signature: a validated
        copy shares no mutable state worth copying (the models are frozen)."""
        return validated_copy(self, update, type(self).__name__)

    @classmethod
    def model_validate_json(cls, json_data: Any, **options: Any) -> Any:
        r"""Pydantic's ``model_validate_json``, its errors one-line :class:`InputError`\ s."""
        try:
            return super().model_validate_json(json_data, **options)
        except ValidationError as error:
            raise InputError(first_error_line(error, cls, cls.__name__)) from None


def validated_copy(model: BaseModel, update: Any, prefix: str) -> Any:
    """``model`` with the fields of ``update`` (a dict, or None) replaced, validated again;
    errors are :class:`InputError` lines naming ``prefix.field``."""
    if update is None:
        update = {}
    if not isinstance(update, dict):
        raise InputError(f"{prefix}.model_copy: update must be a dict, got {shown(update)}")
    cls = type(model)
    unknown = sorted(str(k) for k in update if k not in cls.model_fields)
    if unknown:
        allowed = ", ".join(sorted(cls.model_fields))
        raise InputError(f"{prefix}.{unknown[0]}: unknown field; allowed fields: {allowed}")
    data = {name: getattr(model, name) for name in cls.model_fields} | update
    try:
        return BaseModel.model_validate.__func__(cls, data)
    except ValidationError as error:
        raise InputError(first_error_line(error, cls, prefix)) from None


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


class _Mistype(NamedTuple):
    """A value of the wrong kind where a number is wanted: ``scalar(annotation, value)`` says
    it of one value, ``taken(member, value)`` whether a union member takes it as it is (then
    pydantic decides), ``what`` the error's words."""

    scalar: Callable[[Any, Any], bool]
    taken: Callable[[Any, Any], bool]
    what: str


def _mistyped(annotation: Any, value: Any, rule: _Mistype) -> bool:
    """True when ``value`` is, or holds (in a list, tuple or dict), a value ``rule`` refuses
    where ``annotation`` wants a number and no union member takes it as it is.  Other type
    mismatches are left to pydantic."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _mistyped(args[0], value, rule)
    if origin in (Union, types.UnionType):
        members = [m for m in args if m is not type(None)]  # optional: unset
        if any(rule.taken(member, value) for member in members):
            return False
        return any(_mistyped(member, value, rule) for member in members)
    if isinstance(value, list | tuple) and isinstance(origin, type):
        if not issubclass(origin, Sequence | set | frozenset) or not args:
            return False
        if origin is tuple and args[-1] is not Ellipsis:
            return any(_mistyped(a, v, rule) for a, v in zip(args, value, strict=False))
        return any(_mistyped(args[0], v, rule) for v in value)
    if isinstance(value, dict) and origin is dict and len(args) == 2:
        return any(_mistyped(args[1], v, rule) for v in value.values())
    return rule.scalar(annotation, value)


def _bool_scalar(annotation: Any, value: Any) -> bool:
    """A boolean where a number (or a literal that is not a boolean) is wanted."""
    if not isinstance(value, bool):
        return False
    if get_origin(annotation) is Literal:
        return not any(isinstance(choice, bool) for choice in get_args(annotation))
    return annotation in (int, float)


def _takes_string(member: Any, value: Any) -> bool:
    """Whether a union member accepts the string ``value`` as it is (a string type, a literal
    choice, or anything that is not a number: pydantic decides)."""
    if not isinstance(value, str):
        return False
    origin = get_origin(member)
    if origin is Annotated:
        return _takes_string(get_args(member)[0], value)
    if origin is Literal:
        return value in get_args(member)
    return member not in (int, float)


def _takes_float(member: Any, value: Any) -> bool:
    """Whether a union member accepts the float ``value`` as it is (a float, or anything that
    is neither a whole number, a string nor a boolean: pydantic decides)."""
    if not isinstance(value, float):
        return False
    origin = get_origin(member)
    if origin is Annotated:
        return _takes_float(get_args(member)[0], value)
    return member is float or (origin is None and member not in (int, str, bool))


_BOOLEAN = _Mistype(
    _bool_scalar,
    lambda member, value: not _mistyped(member, value, _BOOLEAN),  # a union: every member
    "a number, not a boolean",
)
_STRING = _Mistype(
    lambda annotation, value: isinstance(value, str) and annotation in (int, float),
    _takes_string,
    "a number, not a string",
)
_FLOAT = _Mistype(
    lambda annotation, value: isinstance(value, float) and annotation is int,
    _takes_float,
    "a whole number, not a float",
)


def _owner_model(model: type[BaseModel], path: list[str]) -> type[BaseModel]:
    """The model that holds the field at ``path`` (field names and, inside a list, tuple or
    dict of models, the index or key, which is skipped)."""
    holder: Any = model
    for part in path:
        field = holder.model_fields.get(part) if _is_model(holder) else None
        if field is None:
            if part.isdigit() or not _is_model(holder):
                continue  # an index into the list of models found at the previous part
            break
        annotation = field.annotation
        while get_origin(annotation) in (list, tuple, dict) and get_args(annotation):
            annotation = get_args(annotation)[-1]
        if not _is_model(annotation):
            break
        holder = annotation
    return holder if _is_model(holder) else model


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


_TYPE_TAGS = {"int", "float", "str", "bool", "list", "dict", "none"}


def _field_path(error: dict) -> list[str]:
    """The error's location as field names: pydantic's union-member tags (``int``,
    ``constrained-int``, ``literal['per-client']``, ``function-after[...]``) removed."""
    return [
        str(part)
        for part in error.get("loc", ())
        if not (str(part) in _TYPE_TAGS or "[" in str(part) or "-" in str(part))
    ]
