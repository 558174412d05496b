"""``arena``: an open square with no inner walls; every entity sees every other.

The open-map extreme of [MODEL §1]: the PVS is cheap (one room) and replies are big.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydantic import Field

from simsrv.core.strict_model import StrictModel
from simsrv.world.maps.base import PLAYER_MINS, GameMap
from simsrv.world.maps.entities import place_entities
from simsrv.world.maps.registry import MAP_KINDS, MapKind


class ArenaParams(StrictModel):
    """Parameters of the open arena (units are Quake units)."""

    size: float = Field(2048.0, ge=256.0, le=1_048_576.0, description="side of the square arena")
    height: float = Field(256.0, ge=64.0, le=8192.0, description="floor-to-ceiling height")
    map_entities: int = Field(0, ge=0, le=100_000, description="map entities (items, lifts)")


def build_arena(params: ArenaParams, rng: np.random.Generator) -> GameMap:
    """One room the size of the map; spawn points on a 3 x 3 grid; entities seeded uniform."""
    s, h = params.size, params.height
    z = -PLAYER_MINS[2]
    spawns = np.array(
        [(x, y, z) for x in (s / 4, s / 2, 3 * s / 4) for y in (s / 4, s / 2, 3 * s / 4)]
    )
    game_map = GameMap(
        kind="arena",
        extent_min=np.zeros(3),
        extent_max=np.array([s, s, h]),
        solid_min=np.zeros((0, 3)),
        solid_max=np.zeros((0, 3)),
        room_min=np.zeros((1, 3)),
        room_max=np.array([[s, s, h]]),
        room_visible=np.ones((1, 1), dtype=bool),
        spawn_points=spawns,
    )
    return dataclasses.replace(
        game_map, entities=place_entities(game_map, params.map_entities, rng)
    )


MAP_KINDS.register("arena", MapKind("arena", ArenaParams, build_arena))
