"""Validate plain dictionaries against pydantic models with one-line, field-naming errors."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from simsrv.errors import InputError

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every scenario section: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


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
    first = error.errors()[0]
    loc = [str(part) for part in first.get("loc", ())]
    field = ".".join([prefix, *loc]) if prefix else ".".join(loc)
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        owner = _owner_model(model, loc[:-1])
        return f"{field}: unknown field; allowed fields: {', '.join(sorted(owner.model_fields))}"
    if kind == "missing":
        return f"{field}: required field is missing"
    message = first.get("msg", "invalid value")
    if message.startswith("Value error, "):
        # a model-level check: its message starts with the field it is about
        name, _, rest = message.removeprefix("Value error, ").partition(": ")
        return f"{field}.{name}: {rest}" if rest else f"{field}: {name}"
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
