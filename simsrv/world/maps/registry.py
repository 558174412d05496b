"""Registry of map kinds: each kind has a validated parameter model and a builder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel

from simsrv.core.registry import Registry
from simsrv.world.maps.base import GameMap

MemoryEstimate = Callable[[BaseModel], tuple[int, str, str]]
"""``estimate(params) -> (bytes, field, what)``: the largest allocation a kind's parameters
ask for, bytes, the parameter that sizes it and what it holds (checked before a run by
:mod:`simsrv.pipeline.resources`)."""


@dataclass(frozen=True)
class MapKind:
    """A registered map layout: ``build(params, rng)`` returns its :class:`GameMap`;
    ``memory_bytes`` estimates its largest allocation when its parameters can make it huge."""

    name: str
    params: type[BaseModel]
    build: Callable[[BaseModel, np.random.Generator], GameMap]
    memory_bytes: MemoryEstimate | None = None


MAP_KINDS: Registry[MapKind] = Registry("map kind")
