"""``two-floor``: an upper floor over part of the map and a pit one cannot climb out of.

The thesis's example of a concentration area [T §4.2.3]: a lower floor that players fall
into and cannot leave, so it accumulates players over time.  The upper floor is a solid slab
``drop`` units high over the first ``upper_fraction`` of the map along x; the rest is the pit.
Walking off the slab's edge drops a player into the pit; from the pit the slab is a wall
(higher than a step, ``STEP_HEIGHT``).  Both floors see each other (one open hall).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from pydantic import Field

from simsrv.core.strict_model import StrictModel
from simsrv.world.maps.base import PLAYER_MINS, STEP_HEIGHT, GameMap
from simsrv.world.maps.entities import place_entities
from simsrv.world.maps.registry import MAP_KINDS, MapKind


class TwoFloorParams(StrictModel):
    """Parameters of the two-floor hall (units are Quake units)."""

    size: float = Field(2048.0, ge=256.0, le=65536.0, description="side of the square hall")
    height: float = Field(256.0, ge=64.0, le=8192.0, description="headroom above each floor")
    drop: float = Field(128.0, gt=STEP_HEIGHT, le=8192.0, description="height of the upper floor")
    upper_fraction: float = Field(0.75, gt=0.0, lt=1.0, description="share of x on the upper floor")
    map_entities: int = Field(0, ge=0, le=100_000, description="map entities (items, lifts)")


def build_two_floor(params: TwoFloorParams, rng: np.random.Generator) -> GameMap:
    """Build the hall; spawn points on the upper floor; entities seeded uniform on both."""
    s, h, d = params.size, params.height, params.drop
    edge = params.upper_fraction * s
    top = d + h
    stand = -PLAYER_MINS[2]
    spawns = np.array([(edge / 2, y, d + stand) for y in (s / 4, s / 2, 3 * s / 4)])
    game_map = GameMap(
        kind="two-floor",
        extent_min=np.zeros(3),
        extent_max=np.array([s, s, top]),
        solid_min=np.array([[0.0, 0.0, 0.0]]),
        solid_max=np.array([[edge, s, d]]),
        room_min=np.array([[0.0, 0.0, d], [edge, 0.0, 0.0]]),
        room_max=np.array([[edge, s, top], [s, s, top]]),
        room_visible=np.ones((2, 2), dtype=bool),
        spawn_points=spawns,
    )
    return dataclasses.replace(
        game_map, entities=place_entities(game_map, params.map_entities, rng)
    )


MAP_KINDS.register("two-floor", MapKind("two-floor", TwoFloorParams, build_two_floor))
