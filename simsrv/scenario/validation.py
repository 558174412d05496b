"""Validate plain dictionaries against pydantic models with one-line, field-naming errors."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from simsrv.errors import InputError

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every scenario section: unknown keys are errors, instances are immutable, and
    numbers are finite (NaN and infinity are never a valid input)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False
    )


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
        raise InputError(f"{prefix}: must be a table of fields, got {data!r}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InputError(_first_error_line(error, model, prefix)) from None


def _first_error_line(error: ValidationError, model: type[BaseModel], prefix: str) -> str:
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
    shown = "" if isinstance(value, dict) else f", got {value!r}"
    return f"{field}: {message}{shown}"


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
