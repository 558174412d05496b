"""Registry of map kinds: each kind has a validated parameter model and a builder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from simsrv.core.registry import Registry
from simsrv.world.maps.base import GameMap


@dataclass(frozen=True)
class MapKind:
    """A registered map layout: ``build(params, rng)`` returns its :class:`GameMap`."""

    name: str
    params: type[BaseModel]
    build: Callable[[BaseModel, np.random.Generator], GameMap]


MAP_KINDS: Registry[MapKind] = Registry("map kind")
