"""The *cube* map of Cordeiro's thesis [T §4.2.3, Fig. 2].

A square box cut by two walls, one transversal (x = centre) and one longitudinal (y = centre),
into four equal rooms.  Each wall half has one doorway in its middle, so the rooms form a ring
(each room has a door to its two neighbours).  No goal entities, no concentration areas.

The thesis gives neither the size nor the door width; both are parameters.  Visibility proxy:
a player sees its own room and, through the doorways, the two adjacent rooms (not the diagonal
one).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from simsrv.core.strict_model import StrictModel
from simsrv.world.maps.base import GameMap
from simsrv.world.maps.registry import MAP_KINDS, MapKind


class CubeParams(StrictModel):
    """Parameters of the cube map (units are Quake units)."""

    size: float = Field(2048.0, ge=256.0, le=65536.0, description="side of the square box")
    height: float = Field(256.0, ge=64.0, le=8192.0, description="floor-to-ceiling height")
    door_width: float = Field(128.0, ge=40.0, description="width of each doorway (> player 32)")
    wall_thickness: float = Field(32.0, ge=8.0, le=512.0, description="thickness of inner walls")

    @model_validator(mode="after")
    def _doors_fit(self) -> CubeParams:
        room = self.size / 2 - self.wall_thickness
        if self.door_width >= room:
            raise ValueError(
                f"door_width: must be smaller than half the size minus the wall ({room:g}), "
                f"got {self.door_width:g}"
            )
        return self


def build_cube(params: CubeParams, rng: np.random.Generator) -> GameMap:
    """Build the four-room cube; ``rng`` is unused (the layout is deterministic)."""
    s, h, half_t = params.size, params.height, params.wall_thickness / 2
    c = s / 2
    door_half = params.door_width / 2
    solids = []
    # wall at x = c, split by doorways centred at y = s/4 and y = 3s/4
    for lo, hi in _wall_segments(s, door_half):
        solids.append(((c - half_t, lo, 0.0), (c + half_t, hi, h)))
    # wall at y = c, doorways centred at x = s/4 and x = 3s/4
    for lo, hi in _wall_segments(s, door_half):
        solids.append(((lo, c - half_t, 0.0), (hi, c + half_t, h)))
    solid = np.array(solids, dtype=float)
    rooms = np.array(
        [
            ((0, 0, 0), (c, c, h)),
            ((c, 0, 0), (s, c, h)),
            ((c, c, 0), (s, s, h)),
            ((0, c, 0), (c, s, h)),
        ],
        dtype=float,
    )
    ring = (
        np.eye(4, dtype=bool)
        | np.roll(np.eye(4, dtype=bool), 1, 1)
        | np.roll(np.eye(4, dtype=bool), -1, 1)
    )
    z = 24.0
    spawns = np.array(
        [(x, y, z) for x in (s / 8, 3 * s / 8, 5 * s / 8, 7 * s / 8) for y in (s / 8, 7 * s / 8)]
    )
    return GameMap(
        kind="cube",
        extent_min=np.zeros(3),
        extent_max=np.array([s, s, h]),
        solid_min=solid[:, 0],
        solid_max=solid[:, 1],
        room_min=rooms[:, 0],
        room_max=rooms[:, 1],
        room_visible=ring,
        spawn_points=spawns,
    )


def _wall_segments(size: float, door_half: float) -> list[tuple[float, float]]:
    """Solid spans of a wall of length ``size`` with doorways centred at size/4 and 3size/4."""
    d1, d2 = size / 4, 3 * size / 4
    return [(0.0, d1 - door_half), (d1 + door_half, d2 - door_half), (d2 + door_half, size)]


MAP_KINDS.register("cube", MapKind("cube", CubeParams, build_cube))
