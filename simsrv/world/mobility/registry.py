"""Registry of mobility models (how synthetic players move)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel

from simsrv.core.registry import Registry
from simsrv.world.maps.base import GameMap


class Mobility(Protocol):
    """A mobility model moves all players one client tick at a time, vectorised.

    Attributes
    ----------
    positions:
        (N, 3) float array of player origins (units); updated in place by :meth:`step`.
    """

    positions: np.ndarray

    def step(self, dt_s: float) -> TickActions:
        """Advance every player by ``dt_s`` seconds and return what they did this tick."""


@dataclass(frozen=True)
class TickActions:
    """Per-player events of one client tick, (N,) bool arrays."""

    moving: np.ndarray
    shot: np.ndarray
    jumped: np.ndarray


@dataclass(frozen=True)
class MobilityKind:
    """A registered mobility model: ``create(params, game_map, count, speed, rng)``;
    ``memory_bytes(params) -> (bytes, field, what)`` estimates its largest allocation when its
    parameters can make it huge (see :data:`simsrv.world.maps.registry.MemoryEstimate`)."""

    name: str
    params: type[BaseModel]
    create: Callable[[BaseModel, GameMap, int, float, np.random.Generator], Mobility]
    memory_bytes: Callable[[BaseModel], tuple[int, str, str]] | None = None


MOBILITY_MODELS: Registry[MobilityKind] = Registry("mobility model")
