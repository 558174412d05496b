"""The entities lump: ``{ "key" "value" ... }`` blocks, as Quake's ``ED_ParseEdict`` reads them.

Keys and values are double-quoted strings (no escapes); a block is one entity.  ``origin``
("x y z", units) and ``angle`` (degrees, yaw) are the keys the simulator uses; brush entities
(doors, lifts, triggers) name their brush model as ``"model" "*N"``.

The text comes from an untrusted file: the number of entities is capped, an origin read must
be three finite numbers within :data:`~simsrv.world.bsp.limits.MAX_COORD`, and a message
quotes at most :data:`QUOTE_CHARS` characters of the text.
"""

from __future__ import annotations

import re

import numpy as np

from simsrv.world.bsp.errors import BspError
from simsrv.world.bsp.limits import MAX_COORD, MAX_ENTITIES

_TOKEN = re.compile(r'"([^"]*)"|([{}])|(\S+)')
QUOTE_CHARS = 40
"""Longest piece of the entities text an error message quotes (the line stays short)."""


def _quote(text: str) -> str:
    """``text`` for a one-line message: repr'd (no newlines), cut to ``QUOTE_CHARS``."""
    return repr(text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "...")


def parse_entities(
    text: str, name: str = "<entities>", max_entities: int = MAX_ENTITIES
) -> list[dict[str, str]]:
    """The entity dictionaries of an entities lump, in file order.

    Raises :class:`~simsrv.world.bsp.errors.BspError` on an unbalanced brace, a key without a
    value, text outside a block, or more than ``max_entities`` entities.
    """
    entities: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    key: str | None = None
    for match in _TOKEN.finditer(text):
        quoted, brace, bare = match.groups()
        if brace == "{":
            if current is not None:
                raise BspError(f"map.file: {name}: entities lump: '{{' inside an entity")
            current, key = {}, None
        elif brace == "}":
            if current is None or key is not None:
                raise BspError(f"map.file: {name}: entities lump: unbalanced '}}'")
            if len(entities) == max_entities:
                raise BspError(
                    f"map.file: {name}: entities lump: more than the {max_entities} entities "
                    "simsrv reads"
                )
            entities.append(current)
            current = None
        elif quoted is not None and current is not None:
            if key is None:
                key = quoted
            else:
                current[key] = quoted
                key = None
        else:
            token = quoted if bare is None else bare
            raise BspError(f"map.file: {name}: entities lump: unexpected {_quote(token)}")
    if current is not None:
        raise BspError(f"map.file: {name}: entities lump: last entity has no closing '}}'")
    return entities


def origin_of(entity: dict[str, str], name: str = "<entities>") -> np.ndarray:
    """The entity's ``origin`` as (3,) float units ((0, 0, 0) when absent, as in Quake).

    Raises :class:`BspError` (naming the file ``name``) unless it is (up to) three finite
    numbers within ``MAX_COORD`` (missing ones are 0).
    """
    text = entity.get("origin", "0 0 0")
    values = text.split()[:3]
    try:
        origin = np.array([float(v) for v in values] + [0.0] * (3 - len(values)))
    except ValueError:
        raise BspError(f"map.file: {name}: entity origin {_quote(text)} is not 3 numbers") from None
    if not (np.isfinite(origin).all() and np.all(np.abs(origin) <= MAX_COORD)):
        raise BspError(
            f"map.file: {name}: entity origin {_quote(text)} is not within +-{MAX_COORD:g} units"
        )
    return origin


def model_index(entity: dict[str, str]) -> int | None:
    """The brush model ``*N`` (``N`` ASCII digits) an entity uses, or None."""
    model = entity.get("model", "")
    digits = model[1:]
    return int(digits) if model.startswith("*") and digits.isascii() and digits.isdigit() else None
