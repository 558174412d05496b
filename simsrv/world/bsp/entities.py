"""The entities lump: ``{ "key" "value" ... }`` blocks, as Quake's ``ED_ParseEdict`` reads them.

Keys and values are double-quoted strings (no escapes); a block is one entity.  ``origin``
("x y z", units) and ``angle`` (degrees, yaw) are the keys the simulator uses; brush entities
(doors, lifts, triggers) name their brush model as ``"model" "*N"``.
"""

from __future__ import annotations

import re

import numpy as np

from simsrv.world.bsp.errors import BspError
from simsrv.world.bsp.limits import MAX_ENTITIES

_TOKEN = re.compile(r'"([^"]*)"|([{}])|(\S+)')


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
            raise BspError(f"map.file: {name}: entities lump: unexpected {token!r}")
    if current is not None:
        raise BspError(f"map.file: {name}: entities lump: last entity has no closing '}}'")
    return entities


def origin_of(entity: dict[str, str]) -> np.ndarray:
    """The entity's ``origin`` as (3,) float units ((0, 0, 0) when absent, as in Quake)."""
    values = entity.get("origin", "0 0 0").split()
    try:
        return np.array([float(v) for v in values[:3]] + [0.0] * (3 - len(values[:3])))
    except ValueError:
        raise BspError(
            f"map.file: entity origin {entity.get('origin')!r} is not 3 numbers"
        ) from None


def model_index(entity: dict[str, str]) -> int | None:
    """The brush model ``*N`` an entity uses, or None."""
    model = entity.get("model", "")
    return int(model[1:]) if model.startswith("*") and model[1:].isdigit() else None
